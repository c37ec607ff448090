// Package proxy is hoist-mcp's proxy: it runs an MCP server as a child
// process, forwards every line between it and the host byte for byte and in
// order, and records each line to a session log without making the host wait
// for the disk (hoist-mcp manual, "Usage", "Log format"; the peer proxy's
// "Fail-open" and "Bytes, exactly").
package proxy

import (
	"io"
	"net/http"
	"os"
	"time"

	"github.com/hoist-mcp/hoist/telemetry"
)

// Exit codes of the proxy itself (manual, "Usage"). Otherwise the proxy
// exits with the server's status, 128+n when signal n ended it.
const (
	ExitUsage = 2   // bad flags or arguments
	ExitProxy = 125 // the proxy failed: log not creatable, server not startable
)

// Defaults of the options.
const (
	DefaultMaxFrameBytes = 64 << 20
	DefaultStopGrace     = 5 * time.Second
)

// Options configure one stdio proxy session.
type Options struct {
	// Command is the server's command line (after --).
	Command []string
	// Upstream is the URL of a Streamable HTTP server to proxy instead of
	// a command; UpstreamHeader holds the headers sent with every request
	// to it (values already read from the environment; never logged).
	Upstream       string
	UpstreamHeader http.Header
	// Record is the directory of session logs; "" only forwards. A leading
	// ~ must already be expanded (see ExpandHome).
	Record string
	// Domain, AgentModel and ServerName are copied into the log header.
	Domain, AgentModel, ServerName string
	// Flow, when set, serves a flow after the agent's calls (--flow).
	Flow *FlowOptions
	// Guards, when set, checks each of the agent's writes against a
	// domain's policy before the server sees it (--guards).
	Guards *GuardsOptions
	// Commit adds hoist_commit to the server's tools (--commit).
	Commit bool
	// Limits, when set, limit the agent's calls (--limit, --max-calls).
	Limits *LimitsOptions
	// Pins, when set, hold each tools/list answer to a pin file
	// (--pin-tools).
	Pins *PinsOptions
	// Console, when set, attaches the session to a hoist console, where a
	// person may hold its frames (--console).
	Console *ConsoleOptions
	// Context is the file the host appends the conversation to (--context;
	// {session} stands for the session). Its new lines are logged as
	// context entries before each tools/call.
	Context string
	// RetainDays > 0 deletes session files older than that many days from
	// Record when the proxy starts.
	RetainDays int
	// Trace prints one line per frame on stderr.
	Trace bool
	// Telemetry, when set, traces each session's requests (--otel;
	// docs/telemetry.md).
	Telemetry *telemetry.Provider
	// InheritStderr hands the server the proxy's own stderr descriptor
	// instead of a pipe the proxy copies from.
	InheritStderr bool
	// MaxFrameBytes is the longest line the proxy assembles to record and
	// inspect; a stream with a longer line becomes a raw pipe.
	MaxFrameBytes int
	// StopGrace is how long the proxy waits for the server after closing its
	// stdin, and again after SIGTERM, before the next step.
	StopGrace time.Duration
	// Getenv reads the proxy's environment (HOIST_SESSION); nil means
	// os.Getenv. The server inherits the process environment.
	Getenv func(string) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Streams are the proxy's own standard streams: the host's side of the wire
// and the place for the proxy's messages.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrFile is the descriptor handed to the server with InheritStderr;
	// nil means os.Stderr.
	ErrFile *os.File
}

func (o *Options) setDefaults() {
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}
