// Package mcpcli is the command line of hoist-mcp: flags, help and exit
// codes, in front of package proxy. It has the shape of every hoist
// command: an options struct, newCmd that parses and checks the flags
// (usage mistakes are flag errors, exit 2), and runProxy that does the work,
// where whatever fails is the proxy's own failure (exit 125).
package mcpcli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/proxy"
)

const long = `hoist-mcp sits between an MCP host (Claude Code, VS Code, Cursor, an agent
framework) and an MCP server. It starts the server as a child process,
forwards every line in both directions byte for byte, and with --record
writes each line to a session log that the hoist toolkit learns from.

In the host's configuration, replace the server's command with hoist-mcp
and put the original command after --:

  {"mcpServers": {"orders": {
     "command": "hoist-mcp",
     "args": ["--record", "~/.hoist/logs", "--domain", "orders",
              "--", "npx", "-y", "some-mcp-server"]}}}

Session logs. --record DIR writes DIR/<session>.jsonl, one per session,
where <session> is the UTC start time to the millisecond and the proxy's
process id. DIR is created (0700) when missing, a leading ~ is expanded, and
logs are created 0600. Use an absolute path: hosts start servers in a
directory of their choosing. The first line is a header (domain, agent model,
host session, the server command with credential-looking values replaced by
<redacted>); each other line is one wire line with its time in ms. The host
session is $HOIST_SESSION, else host-<parent pid>.

Streams. stdout carries only the protocol. The proxy's own messages go to
stderr, prefixed "hoist-mcp:"; with --record the first says where the log
is. The server's stderr reaches stderr unchanged (--inherit-stderr hands it
the descriptor itself). A line longer than --max-frame-bytes turns its
stream into a raw pipe: still forwarded, no longer recorded. In active mode
a longer host line is not forwarded: the host gets an error for it.

Streamable HTTP. --upstream URL proxies a server that speaks MCP over HTTP
instead of starting a command: each host line is POSTed and the answers
(JSON or an event stream) come back as lines; --upstream-header NAME=VAR
sends the value of environment variable VAR, never logged. --listen ADDR
serves hosts by URL (it prints http://ADDR/mcp, with the loopback address
for 0.0.0.0 or [::]): each MCP session gets its own server and log,
<start>-<pid>-<n>.jsonl; a host of revision 2026-07-28, which has no
session, gets one by its Hoist-Session header, else by connection. Without --listen-token-file
only loopback addresses are served and foreign Host and Origin headers are
refused; with it every request needs Authorization: Bearer <token>.

Flows. --flow FILE serves a flow from hoist learn or hoist compile: when the
server answers one of the agent's tools/call, the proxy holds the answer,
makes the read-only lookups the flow predicts (requests of its own, ids
hoist-<n>, never shown to the host) and hands the answer back with their
results in one more text item (at most --flow-max-bytes), so the agent can
skip those turns. With --context the flow also reads what the customer
said, to look up the order or reservation they named. A lookup is made
when its score reaches --flow-threshold, or --detour-cost / --turn-value;
a flow learned with an arbiter is scored by it. An arbiter learned with
hoist learn --oracle also weighs the System-One model's answer: will the
agent use this lookup? The proxy asks it (--oracle, --oracle-url,
--oracle-model, --oracle-cache, as for the judge) about each offer, within
--flow-questions a session, never waiting past the oracle's timeout. Each
decision and run is logged to --flow-log (default <session>.flow.jsonl).
--flow-shadow only decides and logs; --flow-explore explores, for hoist
evaluate, from a fresh seed per session that the flow log names
(--flow-explore-seed replays one).

Guards and hoist_commit. --guards (with --domain retail or airline) checks
each of the agent's writes against that domain's policy before the server
sees it. A write an enforced rule refuses never reaches the server: the
agent gets an error result, "Refused by the policy check, so
cancel_pending_order was not run and nothing changed: 'found it cheaper' is
not an accepted reason (policy check retail.cancel_reason)". A rule that
lacks a fact it needs (a record the session never showed the agent, the
conversation without --context) lets the write through. Each rule is
enforced or only logged by default; --guard RULE=enforce|log|off changes
one, but the confirmation rules (retail.confirmed, airline.confirmed), a
word list that cannot tell a confirmation from a request, only ever log.
Every write's verdicts go to --guards-log (default
<session>.guards.jsonl beside the log); hoist guards runs the same rules
over recorded sessions and τ²-bench results, to choose which to enforce.
--commit adds hoist_commit to the server's tools: it takes {"calls":
[{"name", "arguments"}, ...]}, makes the calls in order (each checked by
the guards first, with --guards), stops at the first that is refused or
fails, and returns every call's result and the calls it did not run; a
sentence on when to use it follows the server's instructions.

` + judgeHelp + `

` + consoleHelp + `

` + callsHelp + `

` + otelHelp + `

Exit status. When the host closes stdin, the server's stdin is closed, its
remaining output forwarded, and the proxy exits with the server's status
(128+n if signal n ended it); a server that does not exit within
--stop-grace gets SIGTERM, then SIGKILL after --stop-grace more. If the
server exits first, the same. SIGTERM or Ctrl-C to the proxy does the same;
with --listen it ends every session so, and at 2 x --stop-grace kills
whatever server still runs. On Linux and macOS each step reaches the
server's process group, so a wrapper (npx, uvx, sh -c) does not leave the
real server running; on Windows only the process started. The proxy never
exits before its servers, and on Linux a server dies with a proxy killed
by SIGKILL.
125: the proxy itself failed (the log could not be created, the server
could not be started, the --flow file could not be read or is not a flow
this hoist-mcp serves), and no log is left. 2: a usage error.

Shell completion. hoist-mcp --completion bash|zsh|fish|powershell prints a
completion script: source <(hoist-mcp --completion bash).`

const example = `  # Try it with the demo server:
  printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"shell","version":"0"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"hello"}}}' \
    | hoist-mcp --record /tmp/hoist-logs -- hoist-mcp-demo

  # Watch the protocol of a real server, one line per frame:
  hoist-mcp --trace -- npx -y @modelcontextprotocol/server-everything

  # A server over HTTP, with a token from the environment:
  hoist-mcp --record ~/.hoist/logs --upstream https://example.com/mcp --upstream-header Authorization=ORDERS_AUTH

  # One proxy for every host, by URL:
  hoist-mcp --listen 127.0.0.1:8931 --record ~/.hoist/logs -- npx -y some-mcp-server

  # The retail policy on the agent's writes, and hoist_commit for the ones the user confirmed:
  hoist-mcp --record ~/.hoist/logs --domain retail --guards --commit -- hoist-mcp-demo --world retail`

// noCommand is the usage mistake of giving no server command. Its message
// is the recipe, which ends with its own pointer to --help.
type noCommand struct{}

func (noCommand) Error() string { return recipe }

// recipe is printed when no server command is given: a working start
// rather than a synopsis.
const recipe = `no server command; put it after --, for example:

  hoist-mcp --record ~/.hoist/logs --domain orders -- npx -y some-mcp-server

Try it with the demo server:

  echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' | hoist-mcp --record /tmp/hoist-logs -- hoist-mcp-demo

Run 'hoist-mcp --help' for every option.`

// factory is what newCmd takes from the process: the streams and the
// environment, which --upstream-header reads.
type factory struct {
	IO        iostreams.Streams
	LookupEnv func(string) (string, bool)
}

// options are hoist-mcp's inputs. newCmd fills Proxy, Listen and FlowFile
// from the flags; the lower-case fields are the flags' raw values.
type options struct {
	IO iostreams.Streams
	// Proxy is the session's configuration, with the server command, the
	// expanded paths and the upstream headers' values; Proxy.Flow is set
	// with --flow, but its flow is read by runProxy, from FlowFile.
	Proxy    proxy.Options
	Listen   proxy.ListenOptions
	FlowFile string

	flowDecider     string
	flowTools       []string
	flowOpts        proxy.FlowOptions
	flowExplore     float64
	questions       int
	detourCost      float64
	turnValue       float64
	guards          bool
	guardModes      []string
	guardsLog       string
	judge           judgeFlags
	console         consoleFlags
	calls           callsFlags
	tokenFile       string
	idleMinutes     float64
	readTimeout     time.Duration
	record          string
	upstreamHeaders []string
	otel            bool
	prog            *cmdutil.Program
}

// Main runs hoist-mcp with args (without the program name) and returns the
// exit code.
func Main(ctx context.Context, args []string, st iostreams.Streams) int {
	cmd := newCmd(&factory{IO: st, LookupEnv: os.LookupEnv}, nil)
	if cmdutil.IsCompletionRequest(args) {
		cmd.SetOut(st.Out) // the shell reads the answer; no wire then
	}
	return cmdutil.Execute(ctx, cmd, args, st.Err, "hoist-mcp", proxy.ExitProxy)
}

// newCmd returns hoist-mcp's command. It checks the flags; runF, when not
// nil, is called with the options instead of runProxy (for tests).
func newCmd(f *factory, runF func(context.Context, *options) error) *cobra.Command {
	opts := &options{IO: f.IO, prog: &cmdutil.Program{Name: "hoist-mcp", Out: f.IO.Out}}
	cmd := &cobra.Command{
		Use:     "hoist-mcp [flags] [--listen ADDR] (-- SERVER_COMMAND [ARGS...] | --upstream URL)",
		Short:   "A recording MCP proxy",
		Long:    long,
		Example: example,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if done, err := opts.prog.Answered(cmd); done {
				return err
			}
			switch {
			case len(args) == 0 && opts.Proxy.Upstream == "":
				return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: noCommand{}}
			case len(args) > 0 && opts.Proxy.Upstream != "":
				return cmdutil.FlagErrorf("--upstream: give either a server URL or a server command after --, not both")
			}
			if err := validate(cmd, opts, f.LookupEnv); err != nil {
				return &cmdutil.FlagError{Err: err}
			}
			if len(args) > 0 {
				opts.Proxy.Command = args
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runProxy(cmd.Context(), opts)
		},
	}
	cmdutil.Frame(cmd, f.IO.In, f.IO.Err, f.IO.Err) // help and usage never go to stdout, which is the wire
	cmd.SetFlagErrorFunc(suggestFlag)
	fl := cmd.Flags()
	fl.SetInterspersed(false) // everything from the server command on is the server's
	fl.StringVar(&opts.record, "record", "", "write a session log per session to `DIR` (created 0700; ~ expanded)")
	fl.StringVar(&opts.Proxy.Domain, "domain", "", "domain `NAME` copied into the log header (e.g. orders, retail)")
	fl.StringVar(&opts.Proxy.AgentModel, "agent-model", "", "`MODEL` that drives the agent, copied into the log header; a --flow learned by agent model gates its lookups by this one's held-out hit rates")
	fl.StringVar(&opts.Proxy.ServerName, "server-name", "", "`NAME` of this server in the log header, for hosts with several servers")
	fl.StringVar(&opts.Proxy.Upstream, "upstream", "", "proxy the Streamable HTTP server at `URL` instead of a command")
	fl.StringArrayVar(&opts.upstreamHeaders, "upstream-header", nil, "send header NAME with the value of environment variable VAR to --upstream (`NAME=VAR`; repeatable; never logged)")
	fl.StringVar(&opts.Listen.Addr, "listen", "", "serve hosts over Streamable HTTP at `ADDR` (host:port) instead of stdio")
	fl.StringVar(&opts.tokenFile, "listen-token-file", "", "require Authorization: Bearer with the token in `FILE`; allows non-loopback addresses")
	fl.Float64Var(&opts.idleMinutes, "listen-idle", proxy.DefaultListenIdle.Minutes(), "end a --listen session after `MINUTES` with no request and no open stream")
	fl.DurationVar(&opts.readTimeout, "listen-read-timeout", proxy.DefaultListenReadTimeout, "give a --listen request `DURATION` to send its head, and again its body (408 and the connection closed past it)")
	fl.StringVar(&opts.Proxy.Context, "context", "", "read the conversation the host appends to `FILE` ({\"role\",\"content\"} lines; {session} stands for the session) before each tools/call and each decision, and log it with --record")
	fl.StringVar(&opts.FlowFile, "flow", "", "serve the flow in `FILE` (from hoist learn or hoist compile) after each of the agent's calls")
	fl.Float64Var(&opts.flowOpts.Rule.Threshold, "flow-threshold", flow.DefaultThreshold, "a lookup needs a score (the arbiter's P(hit), or P(tool) × P(binding matched)) of at least `P`")
	fl.Float64Var(&opts.detourCost, "detour-cost", flow.DefaultDetourCost, "what a lookup the agent does not use costs (`COST`, tokens or any unit); with --turn-value it sets the threshold, COST/VALUE")
	fl.Float64Var(&opts.turnValue, "turn-value", flow.DefaultTurnValue, "what a saved LLM turn is worth (`VALUE`, in --detour-cost's unit)")
	fl.StringVar(&opts.flowDecider, "flow-decider", "", "the `DECIDER`: arbiter (the default for a flow that has one), reach (the default otherwise) or habit")
	fl.StringSliceVar(&opts.flowTools, "flow-tools", nil, "the only `TOOLS` the flow may call (comma-separated; default: every read tool of the flow)")
	fl.IntVar(&opts.flowOpts.Caps.PerCall, "flow-per-call", flow.DefaultCaps.PerCall, "at most `N` lookups after one call")
	fl.IntVar(&opts.flowOpts.Caps.PerSession, "flow-per-session", flow.DefaultCaps.PerSession, "at most `N` lookups in one session")
	fl.IntVar(&opts.questions, "flow-questions", flow.DefaultCaps.Questions, "at most `N` questions to the System-One model in one session (asked by the arbiter of a flow learned with --oracle; reach and habit ask none)")
	fl.IntVar(&opts.flowOpts.Caps.MaxBytes, "flow-max-bytes", flow.DefaultMaxBytes, "append at most `BYTES` of lookups to one result (0: no cap); the flow log says when it bites")
	fl.StringVar(&opts.flowOpts.Log, "flow-log", "", "append each decision and run to `FILE` (default <session>.flow.jsonl beside the log; {session} stands for the session)")
	fl.BoolVar(&opts.flowOpts.Shadow, "flow-shadow", false, "decide and log after each call, but look nothing up")
	fl.Float64Var(&opts.flowExplore, "flow-explore", 0, "with probability `EPSILON`, take another lookup that binds, drawn by the decider's probabilities, and log the policy")
	fl.Uint64Var(&opts.flowOpts.Seed, "flow-explore-seed", 0, "`SEED` of --flow-explore's draws, to replay a session's (default: a fresh one per session, named in the flow log)")
	fl.StringVar(&opts.flowOpts.TaskID, "task-id", "", "the task `ID` this session works on, which picks the flow's fold (default: the session)")
	fl.BoolVar(&opts.guards, "guards", false, "check each of the agent's writes against the policy of --domain (retail or airline) before the server sees it")
	fl.StringArrayVar(&opts.guardModes, "guard", nil, "set one rule's mode (`RULE=enforce|log|off`; repeatable; hoist guards lists the rules)")
	fl.StringVar(&opts.guardsLog, "guards-log", "", "append each write's verdicts to `FILE` (default <session>.guards.jsonl beside the log; {session} stands for the session)")
	addJudgeFlags(fl, &opts.judge)
	addConsoleFlags(fl, &opts.console)
	fl.BoolVar(&opts.Proxy.Commit, "commit", false, "add hoist_commit to the server's tools: the writes the user confirmed, in one call, in order, each checked by --guards")
	addCallsFlags(fl, &opts.calls)
	fl.IntVar(&opts.Proxy.RetainDays, "retain-days", 0, "at start, delete what is older than `N` days from --record and from --oracle-cache when the judge or the flow asks the model (0 keeps all)")
	addOtelFlag(fl, &opts.otel)
	fl.BoolVar(&opts.Proxy.Trace, "trace", false, "print one line per frame on stderr: direction, bytes, method or id")
	fl.BoolVar(&opts.Proxy.InheritStderr, "inherit-stderr", false, "give the server the proxy's stderr descriptor instead of a pipe")
	fl.IntVar(&opts.Proxy.MaxFrameBytes, "max-frame-bytes", proxy.DefaultMaxFrameBytes, "longest line (`BYTES`) to record; past it a stream becomes a raw pipe (in active mode a longer host line is refused)")
	fl.DurationVar(&opts.Proxy.StopGrace, "stop-grace", proxy.DefaultStopGrace, "how long (`DURATION`) to wait for the server after closing its stdin, and again after SIGTERM, before SIGKILL")
	opts.prog.AddFlags(cmd)
	fl.SortFlags = false
	return cmd
}

// runProxy reads the flow and runs the proxy until the session ends. A flow
// that cannot be read is the proxy's own failure, like a log that cannot be
// created: exit 125 before the server starts, and no log.
func runProxy(ctx context.Context, o *options) error {
	if o.FlowFile != "" {
		f, err := flow.Load(o.FlowFile)
		if err != nil {
			return fmt.Errorf("--flow: %w", err)
		}
		o.Proxy.Flow.Flow = f
	}
	if err := openOracle(o); err != nil {
		return err
	}
	var errFile *os.File
	if f, ok := o.IO.Err.(*os.File); ok {
		errFile = f
	}
	streams := proxy.Streams{In: o.IO.In, Out: o.IO.Out, Err: o.IO.Err, ErrFile: errFile}
	tel, stopOtel, err := startOtel(ctx, o.otel, o.IO)
	if err != nil {
		return err
	}
	defer stopOtel()
	o.Proxy.Telemetry = tel
	var code int
	if o.Listen.Addr != "" {
		code = proxy.RunListen(ctx, o.Proxy, o.Listen, streams)
	} else {
		code = proxy.RunStdio(ctx, o.Proxy, streams)
	}
	if code != 0 {
		return &cmdutil.ExitError{Code: code} // the proxy has said why
	}
	return nil
}

// validateFlow checks the --flow flags. The flow itself is read when the
// proxy starts (runProxy): a bad file is not a usage mistake.
func validateFlow(cmd *cobra.Command, o *options) error {
	if o.FlowFile == "" {
		for _, name := range []string{"flow-threshold", "detour-cost", "turn-value", "flow-decider", "flow-tools", "flow-per-call", "flow-per-session", "flow-questions", "flow-max-bytes", "flow-log", "flow-shadow", "flow-explore", "flow-explore-seed", "task-id"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s: needs --flow", name)
			}
		}
		return nil
	}
	d, err := flow.ParseDecider(o.flowDecider)
	if err != nil {
		return fmt.Errorf("--flow-decider: %w", err)
	}
	fo := o.flowOpts
	fo.Rule.Decider = d
	fo.Rule.Epsilon = o.flowExplore
	fo.SeedSet = cmd.Flags().Changed("flow-explore-seed")
	fo.Caps.Questions = o.questions
	switch {
	case fo.Rule.Threshold < 0 || fo.Rule.Threshold > 1:
		return errors.New("--flow-threshold: must be between 0 and 1")
	case o.flowExplore < 0 || o.flowExplore > 1:
		return errors.New("--flow-explore: must be between 0 and 1")
	case fo.Caps.PerCall < 0 || fo.Caps.PerSession < 0 || o.questions < 0:
		return errors.New("--flow-per-call, --flow-per-session and --flow-questions: must be 0 or more")
	case fo.Caps.MaxBytes < 0:
		return errors.New("--flow-max-bytes: must be 0 or more")
	}
	if t, err := costThreshold(cmd, o); err != nil {
		return err
	} else if t >= 0 {
		fo.Rule.Threshold = t
	}
	if cmd.Flags().Changed("flow-tools") {
		fo.Tools = o.flowTools
		if fo.Tools == nil {
			fo.Tools = []string{}
		}
	}
	if fo.Log != "" {
		path, err := proxy.ExpandHome(fo.Log)
		if err != nil {
			return fmt.Errorf("--flow-log: %w", err)
		}
		fo.Log = path
	}
	fo.Agent = o.Proxy.AgentModel // the held-out gate by model
	o.Proxy.Flow = &fo
	return nil
}

// costThreshold returns the threshold --detour-cost and --turn-value give,
// or -1 when neither is set. Both with --flow-threshold is a mistake: two
// thresholds.
func costThreshold(cmd *cobra.Command, o *options) (float64, error) {
	fl := cmd.Flags()
	if !fl.Changed("detour-cost") && !fl.Changed("turn-value") {
		return -1, nil
	}
	switch {
	case fl.Changed("flow-threshold"):
		return 0, errors.New("--flow-threshold: give it, or --detour-cost and --turn-value, not both")
	case o.detourCost < 0 || math.IsNaN(o.detourCost) || math.IsInf(o.detourCost, 0):
		return 0, errors.New("--detour-cost: must be 0 or more")
	case !(o.turnValue > 0) || math.IsInf(o.turnValue, 0):
		return 0, errors.New("--turn-value: must be more than 0")
	}
	return flow.ThresholdOf(o.detourCost, o.turnValue), nil
}

// httpguts reports whether name is a valid HTTP header name (a token).
func httpguts(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validate checks the flags and turns them into o.Proxy and o.Listen. Each
// error is a usage mistake.
func validate(cmd *cobra.Command, o *options, lookupEnv func(string) (string, bool)) error {
	p := &o.Proxy
	if p.RetainDays < 0 {
		return errors.New("--retain-days: must be 0 or more")
	}
	if p.MaxFrameBytes < 1024 {
		return errors.New("--max-frame-bytes: must be at least 1024")
	}
	if p.StopGrace <= 0 || p.StopGrace > time.Hour {
		return errors.New("--stop-grace: must be between 1ns and 1h")
	}
	if p.Upstream != "" {
		u, err := url.Parse(p.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--upstream: %s is not an http:// or https:// URL", mcplog.ScrubURL(p.Upstream))
		}
	}
	if len(o.upstreamHeaders) > 0 && p.Upstream == "" {
		return errors.New("--upstream-header: needs --upstream")
	}
	for _, h := range o.upstreamHeaders {
		name, env, ok := strings.Cut(h, "=")
		if !ok || name == "" || env == "" || !httpguts(name) {
			return fmt.Errorf("--upstream-header %q: want NAME=VAR, the header's name and the environment variable that holds its value", h)
		}
		val, ok := lookupEnv(env)
		if !ok {
			return fmt.Errorf("--upstream-header %s=%s: environment variable %s is not set", name, env, env)
		}
		if p.UpstreamHeader == nil {
			p.UpstreamHeader = http.Header{}
		}
		p.UpstreamHeader.Add(name, val)
	}
	if o.Listen.Addr == "" && (cmd.Flags().Changed("listen-token-file") || cmd.Flags().Changed("listen-idle")) {
		return errors.New("--listen-token-file and --listen-idle need --listen")
	}
	if o.Listen.Addr == "" && cmd.Flags().Changed("listen-read-timeout") {
		return errors.New("--listen-read-timeout needs --listen")
	}
	if o.Listen.Addr != "" {
		if p.InheritStderr {
			return errors.New("--inherit-stderr: not with --listen, whose sessions share the proxy's stderr")
		}
		if o.idleMinutes <= 0 {
			return errors.New("--listen-idle: must be more than 0 minutes")
		}
		o.Listen.Idle = time.Duration(o.idleMinutes * float64(time.Minute))
		if cmd.Flags().Changed("listen-read-timeout") { // else proxy's default
			if o.readTimeout <= 0 || o.readTimeout > time.Hour {
				return errors.New("--listen-read-timeout: must be between 1ns and 1h")
			}
			o.Listen.ReadTimeout = o.readTimeout
		}
		if o.tokenFile != "" {
			b, err := os.ReadFile(o.tokenFile)
			if err != nil {
				return fmt.Errorf("--listen-token-file: %w", err)
			}
			o.Listen.Token = strings.TrimSpace(string(b))
			if o.Listen.Token == "" {
				return fmt.Errorf("--listen-token-file %s: the file is empty", o.tokenFile)
			}
		}
	}
	if err := validateFlow(cmd, o); err != nil {
		return err
	}
	if err := validateGuards(cmd, o); err != nil {
		return err
	}
	if p.Context != "" {
		path, err := proxy.ExpandHome(p.Context)
		if err != nil {
			return fmt.Errorf("--context: %w", err)
		}
		p.Context = path
	}
	if err := validateJudge(cmd, o); err != nil {
		return err
	}
	if err := validateConsole(o); err != nil {
		return err
	}
	if err := validateCalls(o, cmd.Flags().Changed); err != nil {
		return err
	}
	if cmd.Flags().Changed("record") {
		if strings.TrimSpace(o.record) == "" {
			return errors.New("--record: directory is empty")
		}
		dir, err := proxy.ExpandHome(o.record)
		if err != nil {
			return fmt.Errorf("--record: %w", err)
		}
		p.Record = dir
	} else if p.RetainDays > 0 && (p.Guards == nil || p.Guards.Judge == nil) {
		return errors.New("--retain-days: needs --record, or --confirm-judge, whose --oracle-cache it prunes too")
	}
	return nil
}

// validateGuards checks --guards and the flags under it.
func validateGuards(cmd *cobra.Command, o *options) error {
	if !o.guards {
		for _, name := range []string{"guard", "guards-log"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s: needs --guards", name)
			}
		}
		return nil
	}
	if _, err := guards.Rules(o.Proxy.Domain); err != nil {
		if o.Proxy.Domain == "" {
			return fmt.Errorf("--guards: needs --domain %s, the policy to check the writes against", strings.Join(guards.Domains(), " or "))
		}
		return fmt.Errorf("--guards: --domain %s: %w", o.Proxy.Domain, err)
	}
	modes, err := guards.ParseModes(o.guardModes)
	if err != nil {
		return fmt.Errorf("--guard %w", err)
	}
	for id, m := range modes {
		if r, _ := guards.FindRule(id); m == guards.Enforce && r.LogOnly {
			return fmt.Errorf("--guard %s=enforce: %s is only logged, since its word list cannot tell a confirmation from a request (hoist guards can count what it would refuse)", id, id)
		}
	}
	g := &proxy.GuardsOptions{Domain: o.Proxy.Domain, Modes: modes}
	if err := guards.CheckModes(g.Domain, g.Modes); err != nil {
		return fmt.Errorf("--guard: %w", err)
	}
	if o.guardsLog != "" {
		path, err := proxy.ExpandHome(o.guardsLog)
		if err != nil {
			return fmt.Errorf("--guards-log: %w", err)
		}
		g.Log = path
	}
	o.Proxy.Guards = g
	return nil
}
