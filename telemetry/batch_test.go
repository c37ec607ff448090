package telemetry

import (
	"context"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// held counts what it exports; its first export waits for release.
type held struct {
	mu      sync.Mutex
	spans   int
	batches []int
	entered chan struct{}
	release chan struct{}
	first   sync.Once
}

func (h *held) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	h.first.Do(func() {
		close(h.entered)
		<-h.release
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spans += len(spans)
	h.batches = append(h.batches, len(spans))
	return nil
}

func (h *held) Shutdown(context.Context) error { return nil }

// TestBatcherBounds: a full batch is exported without waiting for the
// tick; while an export is slow at most MaxQueue spans wait and the rest
// are dropped; Shutdown exports what waits, in batches of at most MaxBatch.
func TestBatcherBounds(t *testing.T) {
	h := &held{entered: make(chan struct{}), release: make(chan struct{})}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newBatcher(h)))
	tr := tp.Tracer("t")
	end := func(n int) {
		for range n {
			_, s := tr.Start(context.Background(), "s")
			s.End()
		}
	}
	end(MaxBatch)
	<-h.entered // the full batch went out at once
	end(MaxQueue + 1000)
	close(h.release)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The first batch is the full one (or, on a machine slow enough, what
	// the tick found before it); what followed it waited in the queue.
	if want := h.batches[0] + MaxQueue; h.spans != want {
		t.Errorf("exported %d spans, want %d (the first batch, then the queue's bound)", h.spans, want)
	}
	for _, n := range h.batches {
		if n > MaxBatch {
			t.Errorf("a batch of %d spans", n)
		}
	}
}
