package proxy

import (
	machine "github.com/hoist-mcp/hoist/active"
	"github.com/hoist-mcp/hoist/telemetry"
)

// The proxy's side of --otel (docs/telemetry.md): each transport hands its
// session's telemetry.Session the lines it has already assembled: the
// host's requests as they are read, the server's lines before they are
// forwarded, and whatever reaches the host. It only reads them; the bytes
// forwarded are the same with or without it. A nil Session does nothing.

// observer turns the active owner's actions into telemetry: the side logs'
// lines (flow decisions, guard verdicts, the judge's answers) become events
// on the call's span, and the proxy's own requests to the server (lookups,
// hoist_commit's calls) start child spans. It sees a step's actions before
// they are carried out, since a step may answer the host (ending the
// call's span) before it logs why.
func observer(t *telemetry.Session) func([]machine.Action) {
	if t == nil {
		return nil
	}
	return func(acts []machine.Action) {
		for _, act := range acts {
			switch x := act.(type) {
			case machine.Log:
				t.Event(logKinds[x.To], x.Line)
			case machine.ToServer:
				if x.Own {
					t.Lookup(x.Line)
				}
			}
		}
	}
}

// logKinds name the side logs in event names: hoist.<kind>.<type>.
var logKinds = map[machine.LogKind]string{
	machine.FlowLog:    "flow",
	machine.GuardsLog:  "guards",
	machine.ConfirmLog: "confirm",
}

// tracedWriter notes each whole line written to the host.
type tracedWriter struct {
	w interface{ Write([]byte) (int, error) }
	t *telemetry.Session
}

func (w tracedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.t.ToHost(p)
	return n, err
}

// serverWhole reports whether the server's lines reach the host as whole
// lines through the session's host writer (active mode and --console
// intercept them), rather than as the raw pump's reads.
func (s *session) serverWhole() bool { return s.active != nil || s.opts.Console != nil }
