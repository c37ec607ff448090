package mcpcli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/internal/buildinfo"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/telemetry"
)

// otelHelp is --help's paragraph on --otel.
const otelHelp = `Traces. --otel sends OpenTelemetry traces and metrics over OTLP/HTTP, set up
by the standard variables: OTEL_EXPORTER_OTLP_ENDPOINT (default
http://localhost:4318), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
OTEL_EXPORTER_OTLP_HEADERS (never logged), OTEL_SERVICE_NAME (default
hoist-mcp); OTEL_TRACES_EXPORTER=none or OTEL_METRICS_EXPORTER=none turns
one off. Each request of the host is a span named by the MCP semantic
conventions ("tools/call get_order"), a traceparent in its params._meta
its parent; the proxy's lookups are child spans of the call they followed,
and flow decisions, guard verdicts, the judge's answers and console holds
are events on it; mcp.server.operation.duration measures each request.
Export runs in batches off the forwarding path and drops when its queue is
full; at exit the proxy waits at most 2s for a collector. See
docs/telemetry.md.`

// addOtelFlag adds --otel.
func addOtelFlag(fl *pflag.FlagSet, on *bool) {
	fl.BoolVar(on, "otel", false, "send OpenTelemetry traces and metrics of every request over OTLP/HTTP (OTEL_EXPORTER_OTLP_* and OTEL_SERVICE_NAME set it up; docs/telemetry.md)")
}

// startOtel starts telemetry when --otel is on and returns what stops it:
// the last batch is exported within telemetry.DefaultShutdown.
func startOtel(ctx context.Context, on bool, st iostreams.Streams) (*telemetry.Provider, func(), error) {
	if !on {
		return nil, func() {}, nil
	}
	say := func(format string, args ...any) { fmt.Fprintf(st.Err, "hoist-mcp: "+format+"\n", args...) }
	p, err := telemetry.Start(ctx, telemetry.Config{Version: buildinfo.Version(), Say: say})
	if err != nil {
		return nil, nil, err
	}
	return p, func() { p.Shutdown(telemetry.DefaultShutdown) }, nil
}
