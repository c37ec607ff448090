package telemetry

import (
	"context"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Backoff bounds of downExporter: after a failed export, batches are
// dropped unsent for DownFirst, doubled at each failure up to DownMost.
const (
	DownFirst = time.Second
	DownMost  = 8 * time.Second
)

// downExporter drops the batches of a collector that is down without
// sending them, for a while after each failure. The OTLP exporter does not
// retry a refused connection: without this, a collector that is down
// costs every batch its conversion to protobuf and a connection attempt,
// CPU that the proxy's forwarding shares (docs/telemetry.md). A batch it
// drops would have failed the same way; the first export after the pause
// tries the collector again, and one that succeeds ends the pauses.
type downExporter struct {
	sdktrace.SpanExporter
	now func() time.Time

	mu      sync.Mutex
	until   time.Time     // batches before this are dropped
	pause   time.Duration // the last failure's pause
	failing bool          // the last export failed
}

func newDownExporter(exp sdktrace.SpanExporter) *downExporter {
	return &downExporter{SpanExporter: exp, now: time.Now}
}

func (d *downExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	d.mu.Lock()
	if d.now().Before(d.until) {
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	err := d.SpanExporter.ExportSpans(ctx, spans)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.pause = 0
		d.until = time.Time{}
		d.failing = false
		return nil
	}
	d.failing = true
	if d.pause == 0 {
		d.pause = DownFirst
	} else if d.pause = 2 * d.pause; d.pause > DownMost {
		d.pause = DownMost
	}
	d.until = d.now().Add(d.pause)
	return err
}

// paused reports whether batches are being dropped unsent now: a span
// built now would be (build.go builds none).
func (d *downExporter) paused() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.now().Before(d.until)
}

// probing reports whether the collector failed and its pause is over: the
// next batch tries it again, and need not wait for the tick.
func (d *downExporter) probing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failing && !d.now().Before(d.until)
}
