// Package proccli is the command line of hoist-procedure: flags, help and
// exit codes, in front of package procedure. It has the shape of every
// hoist command: an options struct, newCmd that parses and checks the flags
// (usage mistakes are flag errors, exit 2), and runProcedure that does the
// work.
package proccli

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/procedure"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1                 // the run failed: the server, a binding, a timeout
	ExitUsage  = cmdutil.ExitUsage // a usage error or a bad procedure file
)

// DefaultStopGrace is --stop-grace's default.
const DefaultStopGrace = 5 * time.Second

const long = `hoist-procedure runs a procedure against an MCP server with no model: the
scripted agent of hoist's demo and end-to-end tests. It starts the server
command given after --, speaks MCP on its stdin and stdout (initialize,
tools/list, then tools/call), and makes each step of FILE as one LLM turn:
the step's calls go out together, their arguments bound to parameters
(--param NAME=VALUE), constants and earlier results with the binding
expressions flows use, and a think time passes before each turn after the
first (--think, else the step's or the file's think_ms, else 600ms).

Put hoist-mcp in front of the server to record the session, or to serve a
flow: when a result carries the proxy's "Also looked up automatically"
item, a later call with the same tool and arguments is not made, and a step
whose calls were all answered so is a skipped LLM turn. The report (text, or
--json) lists each step's LLM turn or skip and every call.

FILE may also name an example procedure the program carries, such as
cancel-order: hoist-procedure --list names them, with their parameters and
the hoist-mcp-demo world they run against.

The file format is in docs/procedure.md: a header line
{"procedure": "name", "params": {...}, "think_ms": N}, then one JSON object
per step, such as {"tool": "get_user_details", "args": {"user_id":
"$last[find_user_id_by_email]"}}.

hoist-procedure replay LOG -- SERVER_COMMAND plays back the agent of a
recorded session instead: its LLM turns, their recorded calls and times, and
its conversation, skipping what a flow's lookups answered (hoist-procedure
replay --help).

Flags may come before or after FILE; everything after -- is the server's.
The single-dash spellings of the flags (-think 0, -json) still work.

Exit status: 0 when every step ran (tool errors included), 1 when the run
failed (the server, a binding with no value, a timeout), 2 for a usage error
or a bad procedure file (one line naming file:line and field).

Shell completion: hoist-procedure --completion bash|zsh|fish|powershell
prints a completion script.`

const example = `  # The example procedures the program carries:
  hoist-procedure --list

  # A customer cancels an order in the demo shop:
  hoist-procedure --param email=c7@example.com cancel-order -- hoist-mcp-demo --world retail

  # The same, recorded by the proxy, with no think time and a JSON report:
  hoist-procedure --think 0 --json --param email=c7@example.com cancel-order \
      -- hoist-mcp --record /tmp/hoist-logs -- hoist-mcp-demo --world retail

  # A procedure file of your own:
  hoist-procedure --param email=c7@example.com ./my-procedure.jsonl -- hoist-mcp-demo --world retail`

// factory is what newCmd takes from the process.
type factory struct {
	IO iostreams.Streams
}

// options are hoist-procedure's inputs, as newCmd checked them.
type options struct {
	IO        iostreams.Streams
	File      string
	Command   []string
	Params    map[string]string
	Think     time.Duration // < 0: the file's
	Timeout   time.Duration
	StopGrace time.Duration
	JSON      bool
	List      bool // --list: name the built-in procedures, run nothing

	params []string
	prog   *cmdutil.Program
}

// Main runs hoist-procedure with args (without the program name) and
// returns the exit code; the old single-dash flags are respelled.
func Main(ctx context.Context, args []string, st iostreams.Streams) int {
	cmd := newCmd(&factory{IO: st}, nil)
	return cmdutil.Execute(ctx, cmd, cmdutil.SingleDashLongFlags(cmd, args), st.Err, "hoist-procedure", ExitFailed)
}

// newCmd returns hoist-procedure's command. It checks the flags and
// arguments; runF, when not nil, is called with the options instead of
// runProcedure (for tests).
func newCmd(f *factory, runF func(context.Context, *options) error) *cobra.Command {
	opts := &options{IO: f.IO, prog: &cmdutil.Program{Name: "hoist-procedure", Out: f.IO.Out}}
	cmd := &cobra.Command{
		Use:     "hoist-procedure [flags] FILE -- SERVER_COMMAND [ARGS...]",
		Short:   "Run a scripted agent against an MCP server",
		Long:    long,
		Example: example,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if done, err := opts.prog.Answered(cmd); done {
				return err
			}
			var positional []string
			positional, opts.Command = cmdutil.SplitAtDash(cmd, args)
			if opts.List {
				return runList(opts, positional)
			}
			switch {
			case len(positional) == 0:
				return cmdutil.FlagErrorf("no procedure file: hoist-procedure [flags] FILE -- SERVER_COMMAND [ARGS...]")
			case len(positional) > 1:
				return cmdutil.FlagErrorf("one procedure file, got %q; put the server command after --", positional)
			case len(opts.Command) == 0:
				return cmdutil.FlagErrorf("no server command: put it after --, such as -- hoist-mcp-demo --world retail")
			}
			opts.File = positional[0]
			opts.Params = map[string]string{}
			for _, p := range opts.params {
				name, value, ok := strings.Cut(p, "=")
				if !ok || name == "" {
					return cmdutil.FlagErrorf("--param %q: want NAME=VALUE", p)
				}
				opts.Params[name] = value
			}
			if err := checkWaits(opts.Timeout, opts.StopGrace); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runProcedure(cmd.Context(), opts)
		},
	}
	cmdutil.Frame(cmd, f.IO.In, f.IO.Out, f.IO.Err)
	cmd.AddCommand(newCmdReplay(f, nil))
	cmd.CompletionOptions.DisableDefaultCmd = true // --completion is the program's
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.params, "param", nil, "set parameter `NAME=VALUE` of the procedure (repeatable)")
	opts.Think = -1
	fl.Var(thinkFlag{&opts.Think}, "think", "think `TIME` before each LLM turn after the first, overriding the file's (default: the file's, else 600ms)")
	addWaitFlags(fl, &opts.Timeout, &opts.StopGrace)
	fl.BoolVar(&opts.JSON, "json", false, "report as JSON")
	fl.BoolVar(&opts.List, "list", false, "list the built-in procedures, which FILE may name instead of a path, and exit")
	opts.prog.AddFlags(cmd)
	fl.SortFlags = false
	return cmd
}

// addWaitFlags adds --timeout and --stop-grace, the waits of a run
// against a server, to fl.
func addWaitFlags(fl *pflag.FlagSet, timeout, stopGrace *time.Duration) {
	fl.DurationVar(timeout, "timeout", procedure.DefaultCallTimeout, "wait at most `TIME` for each answer")
	fl.DurationVar(stopGrace, "stop-grace", DefaultStopGrace, "after closing the server's stdin, wait `TIME` before SIGTERM, and again before SIGKILL")
}

// checkWaits checks the values of addWaitFlags' flags.
func checkWaits(timeout, stopGrace time.Duration) error {
	switch {
	case timeout <= 0:
		return cmdutil.FlagErrorf("--timeout: must be more than 0")
	case stopGrace <= 0:
		return cmdutil.FlagErrorf("--stop-grace: must be more than 0")
	}
	return nil
}

// runProcedure runs the procedure and writes the report. A bad file or
// parameter exits 2 without the usage hint (the message names file:line
// and field); a run that fails exits 1 after the report of what ran.
func runProcedure(ctx context.Context, o *options) error {
	p, err := openProcedure(o.File)
	if err != nil {
		return &cmdutil.ExitError{Code: ExitUsage, Err: err}
	}
	params, err := p.ResolveParams(o.Params)
	if err != nil {
		return &cmdutil.ExitError{Code: ExitUsage, Err: err}
	}
	c, err := procedure.Start(o.Command, o.IO.Err, nil)
	if err != nil {
		return err
	}
	rep, runErr := procedure.Run(ctx, c, p, procedure.Options{Params: params, Think: o.Think, CallTimeout: o.Timeout})
	closeErr := c.Close(o.StopGrace)
	if o.JSON {
		err = rep.WriteJSON(o.IO.Out)
	} else {
		err = rep.WriteText(o.IO.Out)
	}
	return errors.Join(runErr, closeErr, err)
}

// thinkFlag is --think: a duration, or unset (-1), which leaves the think
// time to the file. Unset it prints as "", so --help does not offer -1ns as
// the default.
type thinkFlag struct{ d *time.Duration }

func (f thinkFlag) String() string {
	if f.d == nil || *f.d < 0 {
		return ""
	}
	return f.d.String()
}

func (f thinkFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

func (thinkFlag) Type() string { return "duration" }
