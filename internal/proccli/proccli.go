// Package proccli is the command line of hoist-procedure: flags, usage and
// exit codes, in front of package procedure.
package proccli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/internal/buildinfo"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/procedure"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // the run failed: the server, a binding, a timeout
	ExitUsage  = 2 // a usage error or a bad procedure file
)

const usage = `usage: hoist-procedure [flags] FILE -- SERVER_COMMAND [ARGS...]

hoist-procedure runs a procedure against an MCP server with no model: the
scripted agent of hoist's demo and end-to-end tests. It starts the server
command, speaks MCP on its stdin and stdout (initialize, tools/list, then
tools/call), and makes each step of FILE as one LLM turn: the step's calls
go out together, their arguments bound to parameters, constants and earlier
results with the binding expressions flows use, and a think time passes
before each turn after the first.

Put hoist-mcp in front of the server to record the session, or to serve a
flow: when a result carries the proxy's "Also looked up automatically"
item, a later call with the same tool and arguments is not made, and a step
whose calls were all answered so is a skipped LLM turn. The report (text, or
--json) lists each step's LLM turn or skip and every call.

The file format is in docs/procedure.md: a header line
{"procedure": "name", "params": {...}, "think_ms": N}, then one JSON object
per step, such as {"tool": "get_user_details", "args": {"user_id":
"$last[find_user_id_by_email]"}}.

Exit status: 0 when every step ran (tool errors included), 1 when the run
failed (the server, a binding with no value, a timeout), 2 for a usage error
or a bad procedure file.

Flags:
`

const example = `
Examples:
  hoist-procedure --param email=c7@example.com testdata/procedures/retail/cancel-order.jsonl \
      -- hoist-mcp-demo --world retail
  hoist-procedure --think 0 --json testdata/procedures/retail/cancel-order.jsonl \
      -- hoist-mcp --record /tmp/hoist-logs -- hoist-mcp-demo --world retail
`

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

type options struct {
	file      string
	command   []string
	params    map[string]string
	think     time.Duration
	timeout   time.Duration
	stopGrace time.Duration
	json      bool
}

// Main runs hoist-procedure with args (without the program name) and
// returns the exit code.
func Main(ctx context.Context, args []string, st iostreams.Streams) int {
	opts, code, err := parseArgs(args, st.Out)
	if err != nil {
		fmt.Fprintf(st.Err, "hoist-procedure: %v\nRun 'hoist-procedure --help' for usage.\n", err)
		return ExitUsage
	}
	if code >= 0 {
		return code
	}
	return run(ctx, opts, st)
}

// parseArgs reads the flags; code >= 0 means exit now (--help, --version).
func parseArgs(args []string, out io.Writer) (*options, int, error) {
	opts := &options{params: map[string]string{}}
	before := args
	for i, a := range args {
		if a == "--" {
			before, opts.command = args[:i], args[i+1:]
			break
		}
	}
	fs := flag.NewFlagSet("hoist-procedure", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var params stringList
	var showVersion bool
	fs.Var(&params, "param", "set parameter `NAME=VALUE` of the procedure (repeatable)")
	fs.DurationVar(&opts.think, "think", -1, "think `TIME` before each LLM turn after the first, overriding the file's (default: the file's, else 600ms)")
	fs.DurationVar(&opts.timeout, "timeout", procedure.DefaultCallTimeout, "wait at most `TIME` for each answer")
	fs.DurationVar(&opts.stopGrace, "stop-grace", 5*time.Second, "after closing the server's stdin, wait `TIME` before SIGTERM, and again before SIGKILL")
	fs.BoolVar(&opts.json, "json", false, "report as JSON")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	var positional []string
	rest := before
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(out, usage)
				fs.SetOutput(out)
				fs.PrintDefaults()
				fmt.Fprint(out, example)
				return nil, ExitOK, nil
			}
			return nil, 0, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if showVersion {
		fmt.Fprintf(out, "hoist-procedure %s\n", buildinfo.Version())
		return nil, ExitOK, nil
	}
	switch {
	case len(positional) == 0:
		return nil, 0, errors.New("no procedure file: hoist-procedure [flags] FILE -- SERVER_COMMAND [ARGS...]")
	case len(positional) > 1:
		return nil, 0, fmt.Errorf("one procedure file, got %q; put the server command after --", positional)
	case len(opts.command) == 0:
		return nil, 0, errors.New("no server command: put it after --, such as -- hoist-mcp-demo --world retail")
	}
	opts.file = positional[0]
	for _, p := range params {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, 0, fmt.Errorf("--param %q: want NAME=VALUE", p)
		}
		opts.params[name] = value
	}
	if opts.timeout <= 0 {
		return nil, 0, errors.New("--timeout: must be more than 0")
	}
	if opts.stopGrace <= 0 {
		return nil, 0, errors.New("--stop-grace: must be more than 0")
	}
	return opts, -1, nil
}

func run(ctx context.Context, opts *options, st iostreams.Streams) int {
	p, err := procedure.ParseFile(opts.file)
	if err != nil {
		fmt.Fprintf(st.Err, "hoist-procedure: %v\n", err)
		return ExitUsage
	}
	params, err := p.ResolveParams(opts.params)
	if err != nil {
		fmt.Fprintf(st.Err, "hoist-procedure: %v\n", err)
		return ExitUsage
	}
	c, err := procedure.Start(opts.command, st.Err, nil)
	if err != nil {
		fmt.Fprintf(st.Err, "hoist-procedure: %v\n", err)
		return ExitFailed
	}
	rep, runErr := procedure.Run(ctx, c, p, procedure.Options{Params: params, Think: opts.think, CallTimeout: opts.timeout})
	closeErr := c.Close(opts.stopGrace)
	if opts.json {
		err = rep.WriteJSON(st.Out)
	} else {
		err = rep.WriteText(st.Out)
	}
	code := ExitOK
	for _, e := range []error{runErr, closeErr, err} {
		if e != nil {
			fmt.Fprintf(st.Err, "hoist-procedure: %v\n", e)
			code = ExitFailed
		}
	}
	return code
}
