// Package democli is the command line of hoist-mcp-demo: flags, help and
// exit codes, in front of package demo. It has the shape of every hoist
// command: an options struct, newCmd that parses and checks the flags
// (usage mistakes are flag errors, exit 2), and runDemo that serves.
package democli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/internal/buildinfo"
	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/internal/demo"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// Exit codes.
const (
	ExitFailed = 1 // serving failed: the address is taken, a stream broke
	ExitUsage  = cmdutil.ExitUsage
)

// Worlds are what --world may name.
var Worlds = []string{"echo", "retail", "tau2-retail"}

const long = `hoist-mcp-demo is a tiny MCP server for trying hoist-mcp and for hoist's
own tests. It serves one of three worlds.

The echo world (the default) has two tools that answer with their
arguments and store nothing:

  lookup   annotated read-only (readOnlyHint: true)
  update   annotated as not read-only (readOnlyHint: false)

"fail": true in the arguments makes either return an error result;
"delay_ms": n makes it wait n ms first (calls run concurrently, so delayed
calls overlap).

--world retail serves a tiny shop instead, with five of τ²-bench retail's
tools and canned data: cN@example.com is user_N (N from 1 to 20), whose
orders #WNa and #WNb are pending. user_N pays with credit_card_100000N, or
when N is a multiple of 3 with gift_card_100000N (balance 10N + 0.50), and
also has paypal_100000N; one who pays by card has gift_card_200000N too,
with 25.00 on it, less than any order costs.

  find_user_id_by_email         {"email"}                       read-only
  get_user_details              {"user_id"}                     read-only
  get_order_details             {"order_id"}                    read-only
  cancel_pending_order          {"order_id", "reason"}          not read-only;
                                the reason is "no longer needed" or
                                "ordered by mistake"
  modify_pending_order_payment  {"order_id", "payment_method_id"}
                                not read-only; another of the user's
                                methods, a gift card covering the total

Answers are τ²-bench's: JSON text, errors as error results ("Error: User
not found"). A cancelled order stays cancelled until the process exits.
--calls-log FILE appends every tools/call the shop serves to FILE, one
{"tool", "arguments"} line each, before answering it: the server's own
record of what reached it, behind a proxy that refuses some
(hoist-mcp --guards).

--world tau2-retail serves τ²-bench's own retail domain: all sixteen of its
tools over its database (--db FILE, τ²-bench's db/retail.json; by default
the copy carried in the program), with τ²-bench's semantics: the
reads, the writes that change orders, users and gift card balances, and
τ²-bench's errors as error results. Tools are listed with the descriptions,
input schemas and readOnlyHint of τ²-bench's recorded sessions. Answers are
written as τ²-bench writes them, every field of a record, so a recorded
agent's reads come back byte for byte (hoist-procedure replay). Each session
starts from the database as loaded, and writes change only that session's
copy, never the file; calls run one at a time, in the order they came.

--replay LOG... serves recorded sessions instead of a world: the session
logs hoist-mcp --record wrote (.jsonl or .jsonl.zst; a directory stands for
the logs in it), so that an agent's tests run offline and the same every
time. It answers initialize and tools/list as the server answered them, and
each call with the recorded answer of the same call: first one whose tool
and arguments are equal as JSON values (member order ignored), else one
whose arguments are equal once strings are trimmed, spaces collapsed and
letters lowered, numbers compared by value and null members dropped; among
those, the first not yet served, in the order of the logs, and once all
are served the last again. A call with no match gets a tool error naming
the nearest recorded call of that tool and the arguments that differ, and
so does a line on stderr. Only the server's own answers are served, not
the proxy's (a guard's refusal). It replays on stdio only (docs/recordings.md).

It speaks MCP on stdin and stdout by default. --http ADDR serves
Streamable HTTP at http://ADDR/mcp instead (ADDR 127.0.0.1:0 picks a free
port; the URL is printed on stdout), insisting on the session id and the
protocol version as a strict server does.

It speaks every revision hoist-mcp does: the session era (initialize, from
2024-11-05 to 2025-11-25) and the stateless era (2026-07-28: server/discover,
the version in each request's _meta, each result marked complete and naming
the server; over --http with no session, one JSON body per request).

Exit status: 0 when the input ends (stdio) or on SIGINT/SIGTERM (--http);
1 when serving fails; 2 for a usage error, a --db file that is not
τ²-bench's retail database, or a --replay log that cannot be read or has a
bad line (one line naming file:line and field).

Shell completion: hoist-mcp-demo --completion bash|zsh|fish|powershell
prints a completion script.`

const example = `  # One request through the recording proxy:
  echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' | hoist-mcp --record /tmp/hoist-logs -- hoist-mcp-demo

  # The shop over Streamable HTTP, behind the proxy's --upstream:
  hoist-mcp-demo --world retail --http 127.0.0.1:8932 &
  hoist-mcp --upstream http://127.0.0.1:8932/mcp

  # A scripted customer against the shop:
  hoist-procedure --param email=c7@example.com cancel-order -- hoist-mcp-demo --world retail

  # A recorded session served back, for a test that needs no server:
  hoist-mcp-demo --replay /tmp/hoist-logs/20261204T101500.000Z-4242.jsonl

  # A recorded τ²-bench agent replayed against τ²-bench's retail database:
  hoist-procedure replay testdata/tau2/logs/retail/gpt-4.1/20250801T161636.780Z-42820.jsonl \
      -- hoist-mcp-demo --world tau2-retail`

// factory is what newCmd takes from the process.
type factory struct {
	IO iostreams.Streams
}

// options are hoist-mcp-demo's inputs, as newCmd checked them.
type options struct {
	IO    iostreams.Streams
	World string
	HTTP  string // "": stdio
	DB    string // --db, "" for the embedded database
	// CallsLog is --calls-log: the file the retail world journals its
	// calls to.
	CallsLog string
	// Replay are the session logs --replay serves, in order.
	Replay []string
	// Describe are --tool-description's TOOL=TEXT values.
	Describe []string

	prog *cmdutil.Program
}

// Main runs hoist-mcp-demo with args (without the program name) and returns
// the exit code. -help, which the hand-written parser once took, is
// respelled --help.
func Main(ctx context.Context, args []string, st iostreams.Streams) int {
	cmd := newCmd(&factory{IO: st}, nil)
	return cmdutil.Execute(ctx, cmd, cmdutil.SingleDashLongFlags(cmd, args), st.Err, "hoist-mcp-demo", ExitFailed)
}

// newCmd returns hoist-mcp-demo's command. It checks the flags; runF, when
// not nil, is called with the options instead of runDemo (for tests).
func newCmd(f *factory, runF func(context.Context, *options) error) *cobra.Command {
	opts := &options{IO: f.IO, prog: &cmdutil.Program{Name: "hoist-mcp-demo", Out: f.IO.Out}}
	cmd := &cobra.Command{
		Use:     "hoist-mcp-demo [--world echo|retail|tau2-retail] [--db FILE] [--http ADDR] | --replay LOG...",
		Short:   "A tiny MCP server for trying hoist-mcp",
		Long:    long,
		Example: example,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && !cmd.Flags().Changed("replay") {
				return cmdutil.FlagErrorf("unexpected argument %q: hoist-mcp-demo takes only flags", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if done, err := opts.prog.Answered(cmd); done {
				return err
			}
			if cmd.Flags().Changed("replay") {
				opts.Replay = append(opts.Replay, args...)
			}
			switch {
			case len(opts.Replay) > 0 && cmd.Flags().Changed("world"):
				return cmdutil.FlagErrorf("--replay serves the recordings, not a world: leave out --world")
			case len(opts.Replay) > 0 && cmd.Flags().Changed("http"):
				return cmdutil.FlagErrorf("--replay serves on stdio only: leave out --http")
			case slices.Contains(opts.Replay, ""):
				return cmdutil.FlagErrorf("--replay: want session logs, such as ~/.hoist/logs/20261204T101500.000Z-4242.jsonl")
			case opts.World != "echo" && opts.World != "retail" && opts.World != "tau2-retail":
				return cmdutil.FlagErrorf("--world %q: want echo, retail or tau2-retail", opts.World)
			case cmd.Flags().Changed("http") && opts.HTTP == "":
				return cmdutil.FlagErrorf("--http: want an address, such as 127.0.0.1:8932")
			case cmd.Flags().Changed("db") && opts.World != "tau2-retail":
				return cmdutil.FlagErrorf("--db: only --world tau2-retail reads a database")
			case cmd.Flags().Changed("db") && opts.DB == "":
				return cmdutil.FlagErrorf("--db: want a file, τ²-bench's db/retail.json")
			case cmd.Flags().Changed("calls-log") && opts.World != "retail":
				return cmdutil.FlagErrorf("--calls-log: only --world retail journals its calls")
			case cmd.Flags().Changed("calls-log") && opts.CallsLog == "":
				return cmdutil.FlagErrorf("--calls-log: want a file to append the calls to")
			case len(opts.Replay) > 0 && len(opts.Describe) > 0:
				return cmdutil.FlagErrorf("--tool-description: not with --replay, which lists the tools as recorded")
			}
			for _, d := range opts.Describe {
				if name, _, ok := strings.Cut(d, "="); !ok || name == "" {
					return cmdutil.FlagErrorf("--tool-description %q: want TOOL=TEXT", d)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDemo(cmd.Context(), opts)
		},
	}
	cmdutil.Frame(cmd, f.IO.In, f.IO.Out, f.IO.Err)
	fl := cmd.Flags()
	fl.StringVar(&opts.World, "world", "echo", "the `WORLD` to serve: echo (lookup and update), retail (a tiny shop) or tau2-retail (τ²-bench's retail domain)")
	fl.StringVar(&opts.DB, "db", "", "τ²-bench's retail database `FILE` for --world tau2-retail (default: the copy carried in the program)")
	fl.StringVar(&opts.HTTP, "http", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio (127.0.0.1:0 picks a port)")
	fl.StringArrayVar(&opts.Replay, "replay", nil, "serve the session logs `LOG`... recorded by hoist-mcp --record instead of a world: their initialize, tools/list and calls (the arguments after it are logs too)")
	fl.StringArrayVar(&opts.Describe, "tool-description", nil, "list tool `TOOL=TEXT` with the description TEXT instead of its own, as a server that changed it would (to try hoist-mcp --pin-tools; repeatable)")
	fl.StringVar(&opts.CallsLog, "calls-log", "", "with --world retail: append each tools/call served to `FILE`, one JSON line each")
	_ = cmd.RegisterFlagCompletionFunc("world", cobra.FixedCompletions(Worlds, cobra.ShellCompDirectiveNoFileComp))
	opts.prog.AddFlags(cmd)
	fl.SortFlags = false
	return cmd
}

// runDemo serves the world until the input ends or ctx is done.
func runDemo(ctx context.Context, o *options) error {
	if len(o.Replay) > 0 {
		return runReplay(ctx, o)
	}
	s := &demo.Server{Version: buildinfo.Version()}
	switch o.World {
	case "retail":
		shop := demo.NewRetail(demo.DefaultRetailUsers)
		if o.CallsLog != "" {
			f, err := os.OpenFile(o.CallsLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				return fmt.Errorf("--calls-log: %w", err)
			}
			defer f.Close()
			shop.Journal = f
		}
		s.World = shop
	case "tau2-retail":
		db, err := loadDB(o.DB)
		if err != nil {
			return &cmdutil.ExitError{Code: ExitUsage, Err: err}
		}
		s.World = demo.NewTau2Retail(db)
	}
	if len(o.Describe) > 0 {
		w := s.World
		if w == nil {
			w = demo.Echo{}
		}
		s.World = redescribed(w, o.Describe)
	}
	if o.HTTP != "" {
		return demo.ListenAndServe(ctx, o.HTTP, &demo.HTTP{Server: s}, func(url string) {
			fmt.Fprintln(o.IO.Out, url)
			fmt.Fprintf(o.IO.Err, "hoist-mcp-demo: serving MCP at %s\n", url)
		})
	}
	return s.Serve(ctx, o.IO.In, o.IO.Out)
}

// loadDB returns the database to serve: the file --db names, else
// τ²-bench's retail database as the program carries it, so that the demo
// runs anywhere after go install.
func loadDB(flag string) (*demo.Tau2DB, error) {
	if flag != "" {
		return demo.LoadTau2DB(flag)
	}
	return demo.EmbeddedTau2DB()
}

// redescribedWorld lists some of its world's tools with other descriptions
// (--tool-description): a server that changed them.
type redescribedWorld struct {
	demo.World
	desc map[string]string
}

func redescribed(w demo.World, flags []string) demo.World {
	r := redescribedWorld{World: w, desc: map[string]string{}}
	for _, f := range flags {
		name, text, _ := strings.Cut(f, "=")
		r.desc[name] = text
	}
	return r
}

// Tools implements demo.World.
func (r redescribedWorld) Tools() []any {
	var out []any
	for _, t := range r.World.Tools() {
		if m, ok := t.(map[string]any); ok {
			if text, ok := r.desc[m["name"].(string)]; ok {
				c := maps.Clone(m)
				c["description"] = text
				t = c
			}
		}
		out = append(out, t)
	}
	return out
}
