package telemetry

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// manual starts a Provider whose records wait until build is called.
func manual(tb testing.TB) *Provider {
	tb.Helper()
	p, err := Start(context.Background(), Config{SpanExporter: tracetest.NewNoopExporter(), MetricReader: sdkmetric.NewManualReader(), Getenv: func(string) string { return "" }, manual: true})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func echoCall(id string) ([]byte, []byte) {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"0123456789abcdef"}}}`),
		[]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"Echo: 0123456789abcdef"}]}}`)
}

// BenchmarkCall is one tools/call's whole cost to the proxy with --otel:
// its request and answer noted, its span built and ended, and its
// duration recorded.
func BenchmarkCall(b *testing.B) {
	p := manual(b)
	defer p.Shutdown(0)
	benchCalls(b, p)
}

// benchCalls notes a tools/call and its answer per iteration, a new id
// each, and builds the spans of every 256.
func benchCalls(b *testing.B, p *Provider) {
	s := p.Session("s", Pipe)
	defer s.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		call, answer := echoCall(strconv.Itoa(i))
		s.FromHost(call)
		s.FromServer(answer, true)
		if i%256 == 255 {
			p.build()
		}
	}
}

// BenchmarkNote is what of a tools/call's cost is on the forwarding path:
// its request and its answer read and noted in the queue.
func BenchmarkNote(b *testing.B) {
	call, answer := echoCall("7")
	benchNote(b, call, answer)
}

// BenchmarkCallDown is BenchmarkCall while the collector is down and the
// export paused: the records build no span, only the metric.
func BenchmarkCallDown(b *testing.B) {
	p := manual(b)
	defer p.Shutdown(0)
	p.down.mu.Lock()
	p.down.until = p.down.now().Add(24 * time.Hour)
	p.down.mu.Unlock()
	benchCalls(b, p)
}

// BenchmarkNoteLarge is BenchmarkNote with a 64 KiB argument and result,
// skipped at the speed of memchr.
func BenchmarkNoteLarge(b *testing.B) {
	text := strings.Repeat("0123456789abcdef", 4096)
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + text + `"}}}`)
	answer := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Echo: ` + text + `"}]}}`)
	b.SetBytes(int64(len(call) + len(answer)))
	benchNote(b, call, answer)
}

// benchNote notes call and answer on one session per iteration, building
// the queued records' spans every 2048 calls outside the timer.
func benchNote(b *testing.B, call, answer []byte) {
	p := manual(b)
	defer p.Shutdown(0)
	s := p.Session("s", Pipe)
	defer s.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.FromHost(call)
		s.FromServer(answer, true)
		if i%2048 == 2047 {
			b.StopTimer()
			p.build()
			b.StartTimer()
		}
	}
}
