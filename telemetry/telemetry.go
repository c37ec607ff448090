// Package telemetry traces what hoist-mcp forwards with OpenTelemetry
// (hoist-mcp --otel; docs/telemetry.md): one span per MCP request of the
// host, named and attributed by the MCP semantic conventions (semconv's
// mcpconv), the proxy's own lookups as child spans of the call they
// followed, the proxy's decisions as span events, and the metric
// mcp.server.operation.duration.
//
// Little of it is on the forwarding path: a Session reads the few members
// a span needs of a line the proxy has already assembled and queues a
// record of them, allocating nothing in the common case (record.go); one
// goroutine builds the spans and the metric from the records later
// (build.go), and the spans are exported in batches (batch.go), over
// OTLP/HTTP, with bounded queues that drop when full. A collector that is
// down or slow costs the host nothing; while it is down no span is built;
// Shutdown waits for it at most a bounded time.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service a span names when OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) names none.
const ServiceName = "hoist-mcp"

// DefaultShutdown bounds how long Shutdown waits for the last batch to be
// exported: a collector that is down never delays the proxy's exit by more.
const DefaultShutdown = 2 * time.Second

// Queue bounds: at most MaxQueue spans wait for export; past that new spans
// are dropped, never waited for.
const (
	MaxQueue  = 2048
	MaxBatch  = 512
	BatchWait = time.Second
)

// Config configures a Provider. The exporters read the standard variables
// themselves (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, ...); the resource
// reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
type Config struct {
	// Version is hoist-mcp's version, the service.version of every span.
	Version string
	// Say reports an export failure on the proxy's stderr, once per kind:
	// the error's text, never the headers.
	Say func(format string, args ...any)
	// Getenv reads the environment; nil means os.Getenv.
	// OTEL_TRACES_EXPORTER=none and OTEL_METRICS_EXPORTER=none turn
	// either signal off.
	Getenv func(string) string
	// SpanExporter and MetricReader replace the OTLP exporters (tests).
	SpanExporter sdktrace.SpanExporter
	MetricReader sdkmetric.Reader
	// manual leaves the records queued until build is called (tests).
	manual bool
}

// Provider holds the SDK's trace and meter providers of one proxy process.
type Provider struct {
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	tracer trace.Tracer
	server mcpconv.ServerOperationDuration
	client mcpconv.ClientOperationDuration
	prop   propagation.TextMapPropagator
	down   *downExporter // nil when traces are off
	batch  *batcher
	say    func(string, ...any)

	// The records' queue (record.go): the forwarding side appends.
	qmu     sync.Mutex
	queue   []record
	names   map[string]string // interned method and tool names
	dropped uint64            // records the queue had no room for
	kick    chan struct{}

	// The builder's (build.go).
	building sync.Mutex
	spare    []record
	sets     map[setKey]metric.RecordOption
	unbuilt  atomic.Uint64 // spans not built: they could not have been exported
	loopStop chan struct{}
	loopDone chan struct{}
	stopOnce sync.Once
}

// Start sets up tracing and metrics as the environment configures them.
// It contacts no collector: the first export happens later, off the
// forwarding path.
func Start(ctx context.Context, c Config) (*Provider, error) {
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	// The SDK's own log says what it could not parse, and the export
	// headers are secrets: it says nothing here. Export failures reach the
	// proxy's stderr through the error handler, as their text.
	otel.SetLogger(logr.Discard())
	if c.Say != nil {
		otel.SetErrorHandler(&errorOnce{say: c.Say})
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName), semconv.ServiceVersion(c.Version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("--otel: %w", err)
	}
	p := &Provider{
		prop:     propagation.TraceContext{},
		names:    map[string]string{},
		sets:     map[setKey]metric.RecordOption{},
		kick:     make(chan struct{}, 1),
		loopStop: make(chan struct{}),
		loopDone: make(chan struct{}),
		say:      c.Say,
	}

	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if getenv("OTEL_TRACES_EXPORTER") != "none" {
		exp := c.SpanExporter
		if exp == nil {
			exp, err = otlptracehttp.New(ctx)
			if err != nil {
				return nil, fmt.Errorf("--otel: %v", err)
			}
		}
		p.down = newDownExporter(exp)
		p.batch = newBatcher(p.down)
		p.batch.probing = p.down.probing
		topts = append(topts, sdktrace.WithSpanProcessor(p.batch))
	}
	p.tp = sdktrace.NewTracerProvider(topts...)

	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	switch {
	case c.MetricReader != nil:
		mopts = append(mopts, sdkmetric.WithReader(c.MetricReader))
	case getenv("OTEL_METRICS_EXPORTER") != "none":
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			p.tp.Shutdown(ctx)
			return nil, fmt.Errorf("--otel: %v", err)
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	p.mp = sdkmetric.NewMeterProvider(mopts...)

	p.tracer = p.tp.Tracer("github.com/hoist-mcp/hoist/telemetry", trace.WithInstrumentationVersion(c.Version))
	meter := p.mp.Meter("github.com/hoist-mcp/hoist/telemetry")
	if p.server, err = mcpconv.NewServerOperationDuration(meter); err != nil {
		return nil, fmt.Errorf("--otel: %v", err)
	}
	if p.client, err = mcpconv.NewClientOperationDuration(meter); err != nil {
		return nil, fmt.Errorf("--otel: %v", err)
	}
	if c.manual {
		close(p.loopDone)
	} else {
		go p.loop()
	}
	return p, nil
}

// Shutdown exports what is still queued and stops the exporters, waiting
// at most timeout (DefaultShutdown when 0 or less): what a collector that
// is down did not take by then is dropped.
func (p *Provider) Shutdown(timeout time.Duration) error {
	if p == nil {
		return nil
	}
	if timeout <= 0 {
		timeout = DefaultShutdown
	}
	p.stopOnce.Do(func() {
		close(p.loopStop)
		<-p.loopDone
		p.build()
		if records, _ := p.Dropped(); records > 0 && p.say != nil {
			p.say("telemetry: %d records of requests, answers or events were dropped, noted faster than their spans were built (at most %d wait)", records, MaxRecords)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	var terr, merr error
	wg.Add(2)
	go func() { defer wg.Done(); terr = p.tp.Shutdown(ctx) }()
	go func() { defer wg.Done(); merr = p.mp.Shutdown(ctx) }()
	wg.Wait()
	return errors.Join(terr, merr)
}

// errorOnce reports the SDK's errors (an export that failed) on the
// proxy's stderr, the first of each text only: a collector that stays down
// fails every batch the same way.
type errorOnce struct {
	mu   sync.Mutex
	said map[string]bool
	say  func(string, ...any)
}

func (e *errorOnce) Handle(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if e.said[msg] || len(e.said) >= 8 {
		return
	}
	if e.said == nil {
		e.said = map[string]bool{}
	}
	e.said[msg] = true
	e.say("telemetry: %s (further export failures of this kind are not reported)", msg)
}
