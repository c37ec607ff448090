package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
)

// TestNoteAllocatesNothing: on the forwarding path, noting a request (its
// traceparent too) and its answer reads them and queues their records
// without allocating; the spans are built later, off that path.
func TestNoteAllocatesNothing(t *testing.T) {
	p := manual(t)
	defer p.Shutdown(0)
	s := p.Session("s", Pipe)
	defer s.Close()
	call := []byte(`{"jsonrpc":"2.0","id":"0f8e2a6c-5d1b-4c3e-9a7f-2b6d8e1c4a90","method":"tools/call","params":{"name":"echo","arguments":{"message":"0123456789abcdef"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`)
	answer := []byte(`{"jsonrpc":"2.0","id":"0f8e2a6c-5d1b-4c3e-9a7f-2b6d8e1c4a90","result":{"content":[{"type":"text","text":"Echo: 0123456789abcdef"}],"isError":false}}` + "\n")
	note := func() {
		s.FromHost(call)
		s.FromServer(answer, false)
		s.ToHost(answer)
	}
	// Both of the queue's buffers grown, the names interned.
	for range 2 {
		for range 200 {
			note()
		}
		p.build()
	}
	if n := testing.AllocsPerRun(100, note); n != 0 {
		t.Errorf("noting a call and its answer allocated %v times", n)
	}
	p.qmu.Lock()
	queued := len(p.queue)
	p.qmu.Unlock()
	if queued != 3*101 { // AllocsPerRun runs once more to warm up
		t.Errorf("%d records queued, want %d", queued, 3*101)
	}
}

// counting counts the spans started.
type counting struct{ started atomic.Int64 }

func (c *counting) OnStart(context.Context, sdktrace.ReadWriteSpan) { c.started.Add(1) }
func (c *counting) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (c *counting) Shutdown(context.Context) error                  { return nil }
func (c *counting) ForceFlush(context.Context) error                { return nil }

// TestFullQueueDrops: past MaxRecords, records are dropped as they are
// noted and counted, and no span is ever built of them.
func TestFullQueueDrops(t *testing.T) {
	p := manual(t)
	defer p.Shutdown(0)
	spans := &counting{}
	p.tp.RegisterSpanProcessor(spans)
	s := p.Session("s", Pipe)
	for i := range MaxRecords + 100 {
		call, _ := echoCall(strconv.Itoa(i))
		s.FromHost(call)
	}
	if records, _ := p.Dropped(); records != 100 {
		t.Errorf("%d records dropped, want 100", records)
	}
	s.Close()
	if n := spans.started.Load(); n != MaxRecords {
		t.Errorf("%d spans built, want %d: the dropped records built none", n, MaxRecords)
	}
	var said []string
	p.say = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	p.Shutdown(0)
	if len(said) != 1 || !strings.Contains(said[0], "100 records") {
		t.Errorf("at exit the proxy said %q, want the 100 records dropped", said)
	}
}

// TestPausedBuildsNoSpans: while the collector is down and its pause lasts
// past the next batch, the records build no span (it would be dropped
// unsent), but the metric is still recorded; once the collector is back
// they build spans again.
func TestPausedBuildsNoSpans(t *testing.T) {
	p := manual(t)
	defer p.Shutdown(0)
	reader := sdkmetric.NewManualReader()
	p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var err error
	if p.server, err = mcpconv.NewServerOperationDuration(p.mp.Meter("t")); err != nil {
		t.Fatal(err)
	}
	spans := &counting{}
	p.tp.RegisterSpanProcessor(spans)
	s := p.Session("s", Pipe)
	calls := func(n int) {
		for i := range n {
			call, answer := echoCall(strconv.Itoa(i))
			s.FromHost(call)
			s.FromServer(answer, true)
		}
		p.build()
	}
	p.down.mu.Lock()
	p.down.until = p.down.now().Add(DownMost)
	p.down.mu.Unlock()
	calls(10)
	if n := spans.started.Load(); n != 0 {
		t.Errorf("%d spans built while the collector was down", n)
	}
	if _, unbuilt := p.Dropped(); unbuilt != 10 {
		t.Errorf("%d spans counted as not built, want 10", unbuilt)
	}
	p.down.mu.Lock()
	p.down.until = p.down.now()
	p.down.mu.Unlock()
	calls(10)
	if n := spans.started.Load(); n != 10 {
		t.Errorf("%d spans built with the collector back, want 10", n)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) != 1 || len(rm.ScopeMetrics[0].Metrics) != 1 {
		t.Fatalf("metrics %+v", rm.ScopeMetrics)
	}
	if h := rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Histogram[float64]); len(h.DataPoints) != 1 || h.DataPoints[0].Count != 20 {
		t.Errorf("durations recorded %+v, want 20 of one set: the calls while down too", h.DataPoints)
	}
}
