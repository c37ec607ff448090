package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// failing counts the batches that reach it and fails while down.
type failing struct {
	calls int
	down  bool
}

func (f *failing) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	f.calls++
	if f.down {
		return errors.New("connection refused")
	}
	return nil
}

func (f *failing) Shutdown(context.Context) error { return nil }

// TestDownExporterPauses: a collector that is down is tried once per
// pause, not for every batch; the pause doubles up to DownMost; a
// collector that is back gets every batch again.
func TestDownExporterPauses(t *testing.T) {
	f := &failing{down: true}
	now := time.Unix(1000, 0)
	d := newDownExporter(f)
	d.now = func() time.Time { return now }
	export := func() error { return d.ExportSpans(context.Background(), nil) }

	if err := export(); err == nil {
		t.Fatal("the first failure was not returned")
	}
	for range 5 {
		if err := export(); err != nil {
			t.Fatalf("a batch in the pause: %v", err)
		}
	}
	if f.calls != 1 {
		t.Fatalf("a down collector was tried %d times in its first pause, want 1", f.calls)
	}
	want := []time.Duration{DownFirst, 2 * DownFirst, 4 * DownFirst, DownMost, DownMost}
	for i, pause := range want {
		now = now.Add(d.pause - time.Nanosecond)
		export()
		if f.calls != i+1 {
			t.Fatalf("tried before the pause of %v ended", d.pause)
		}
		now = now.Add(time.Nanosecond)
		if err := export(); err == nil {
			t.Fatal("a failure after the pause was not returned")
		}
		if f.calls != i+2 || d.pause != min(2*pause, DownMost) {
			t.Fatalf("after the pause of %v: %d tries, next pause %v", pause, f.calls, d.pause)
		}
	}

	f.down = false
	now = now.Add(d.pause)
	for range 3 {
		if err := export(); err != nil {
			t.Fatal(err)
		}
	}
	if calls := f.calls; calls != len(want)+4 {
		t.Fatalf("a collector that is back got %d of 3 batches", calls-len(want)-1)
	}
}
