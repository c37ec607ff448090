package telemetry

import (
	"context"
	"strconv"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkCall is one tools/call's cost to the proxy with --otel: its
// span started and ended, and its duration recorded.
func BenchmarkCall(b *testing.B) {
	p, err := Start(context.Background(), Config{SpanExporter: tracetest.NewNoopExporter(), MetricReader: sdkmetric.NewManualReader(), Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Shutdown(0)
	s := p.Session("s", Pipe)
	defer s.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := strconv.Itoa(i)
		s.FromHost([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"0123456789abcdef"}}}`))
		s.FromServer([]byte(`{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"Echo: 0123456789abcdef"}]}}`), true)
	}
}
