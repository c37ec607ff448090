package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ExportTimeout bounds one batch's export (the SDK's batch processor's
// default).
const ExportTimeout = 30 * time.Second

// batcher is the span processor: ended spans wait in a bounded queue (at
// most MaxQueue; past that they are dropped) and are exported by one
// goroutine in batches of at most MaxBatch, every BatchWait or as soon as a
// batch is full. Unlike the SDK's batch processor, which hands each span
// to its goroutine through a channel (a goroutine woken for every span,
// which on a busy machine costs the proxy more CPU than the span), ending
// a span only appends it under a lock; the goroutine is woken once a batch.
type batcher struct {
	exp sdktrace.SpanExporter
	// probing, when set, reports whether a span should go out at once: a
	// collector that was down is tried again with the first spans built
	// after its pause, not a second's worth of them.
	probing func() bool

	mu    sync.Mutex
	queue []sdktrace.ReadOnlySpan

	exporting sync.Mutex // one export at a time, in order
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
}

func newBatcher(exp sdktrace.SpanExporter) *batcher {
	b := &batcher{exp: exp, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.queue) >= MaxQueue {
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, s)
	full := len(b.queue) == MaxBatch
	b.mu.Unlock()
	if full || b.probing != nil && b.probing() {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	tick := time.NewTicker(BatchWait)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		case <-b.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ExportTimeout)
		b.export(ctx)
		cancel()
	}
}

// export exports what is queued, a batch at a time, until the queue is
// empty or ctx ends; failures go to the SDK's error handler.
func (b *batcher) export(ctx context.Context) {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	for ctx.Err() == nil {
		b.mu.Lock()
		n := min(len(b.queue), MaxBatch)
		if n == 0 {
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil
		}
		b.mu.Unlock()
		if err := b.exp.ExportSpans(ctx, batch); err != nil {
			otel.Handle(err)
		}
	}
}

// ForceFlush exports what is queued.
func (b *batcher) ForceFlush(ctx context.Context) error {
	b.export(ctx)
	return ctx.Err()
}

// Shutdown stops the goroutine, exports what is queued while ctx lasts,
// and shuts the exporter down.
func (b *batcher) Shutdown(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		close(b.stop)
		<-b.done
		b.export(ctx)
		err = b.exp.Shutdown(ctx)
	})
	return err
}

// full reports whether the queue has no room: a span ended now is dropped.
func (b *batcher) full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) >= MaxQueue
}
