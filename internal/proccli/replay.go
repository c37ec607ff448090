package proccli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/procedure"
)

const replayLong = `hoist-procedure replay plays back the agent of a recorded session against
an MCP server, with no model: the session's LLM turns in order, each
turn's calls with their recorded arguments, sent together, and the time
the agent and the customer took between them (scaled by --time-scale).
The conversation is written to --context FILE as it happened, one
{"role", "content"} line per message, for hoist-mcp's --context to read.

LOG is a session log that hoist-mcp --record wrote (a .meta.json beside it
gives the task); --tau2 FILE --sim ID replays a simulation of a τ²-bench
results file instead (ID, or a prefix of it that names one). The server
command comes after --; put hoist-mcp --flow in front of the world to
measure what a flow saves live:

  hoist-procedure replay LOG -- hoist-mcp --flow F --task-id T -- hoist-mcp-demo --world tau2-retail

When a result carries the proxy's "Also looked up automatically" item, a
later call with the same tool and arguments, before the agent's next write
(a call of a tool the server marks readOnlyHint: false), is not made: the
lookup's result stands for it. A turn whose every call was so answered is
skipped, with its think time and what the assistant said with it.

The report (text, or --json) gives each turn and call, and the totals:
turns_made and turns_skipped, calls_made and calls_skipped, the lookups
appended and the lookups_used, and results_matched of results_compared:
the reads (readOnlyHint: true) whose live result equals the recorded one,
compared as JSON values when both are JSON. docs/procedure.md has the rest.

Exit status: 0 when every turn ran, 1 when the replay failed (the server,
a timeout), 2 for a usage error or a recording that cannot be read (one
line naming the file, line and field).`

const replayExample = `  # A τ²-bench retail agent against τ²-bench's retail database:
  hoist-procedure replay testdata/tau2/logs/retail/gpt-4.1/20250801T161636.780Z-42820.jsonl \
      -- hoist-mcp-demo --world tau2-retail

  # The same through a flow, ten times as fast, with the JSON report:
  hoist-procedure replay --time-scale 0.1 --json --context /tmp/ctx.jsonl \
      testdata/tau2/logs/retail/gpt-4.1/20250801T161636.780Z-42820.jsonl \
      -- hoist-mcp --flow testdata/flows/tau2-retail.flow.json --domain retail --task-id 27 --context /tmp/ctx.jsonl \
      -- hoist-mcp-demo --world tau2-retail

  # A simulation of a τ²-bench results file:
  hoist-procedure replay --tau2 testdata/tau2/results/retail-gpt-4.1.json --sim 89af04d0 -- hoist-mcp-demo --world tau2-retail`

// replayOptions are hoist-procedure replay's inputs, as newCmdReplay
// checked them.
type replayOptions struct {
	IO        iostreams.Streams
	Log       string // the session log, or "" with Tau2
	Tau2      string
	Sim       string
	Command   []string
	Context   string
	TimeScale float64
	Timeout   time.Duration
	StopGrace time.Duration
	JSON      bool
}

// newCmdReplay returns hoist-procedure replay. runF, when not nil, is
// called with the options instead of runReplay (for tests).
func newCmdReplay(f *factory, runF func(context.Context, *replayOptions) error) *cobra.Command {
	opts := &replayOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:     "replay [flags] (LOG | --tau2 FILE --sim ID) -- SERVER_COMMAND [ARGS...]",
		Short:   "Play back a recorded agent against an MCP server",
		Long:    replayLong,
		Example: replayExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var positional []string
			positional, opts.Command = cmdutil.SplitAtDash(cmd, args)
			switch {
			case opts.Tau2 == "" && len(positional) == 0:
				return cmdutil.FlagErrorf("no recording: name a session LOG, or --tau2 FILE --sim ID")
			case opts.Tau2 != "" && len(positional) > 0:
				return cmdutil.FlagErrorf("a LOG (%s) and --tau2: name one recording", positional[0])
			case len(positional) > 1:
				return cmdutil.FlagErrorf("one session log, got %q; put the server command after --", positional)
			case opts.Tau2 != "" && opts.Sim == "":
				return cmdutil.FlagErrorf("--tau2: name the simulation with --sim ID")
			case opts.Tau2 == "" && opts.Sim != "":
				return cmdutil.FlagErrorf("--sim: only with --tau2 FILE")
			case len(opts.Command) == 0:
				return cmdutil.FlagErrorf("no server command: put it after --, such as -- hoist-mcp-demo --world tau2-retail")
			case opts.TimeScale < 0:
				return cmdutil.FlagErrorf("--time-scale %v: want 0 or more", opts.TimeScale)
			}
			if err := checkWaits(opts.Timeout, opts.StopGrace); err != nil {
				return err
			}
			if len(positional) == 1 {
				opts.Log = positional[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReplay(cmd.Context(), opts)
		},
	}
	cmdutil.Frame(cmd, f.IO.In, f.IO.Out, f.IO.Err)
	fl := cmd.Flags()
	fl.StringVar(&opts.Tau2, "tau2", "", "replay a simulation of the τ²-bench results `FILE` instead of a session log")
	fl.StringVar(&opts.Sim, "sim", "", "the simulation `ID` of --tau2 (or a prefix that names one)")
	fl.StringVar(&opts.Context, "context", "", "write the conversation to `FILE` as it happens (created new), for hoist-mcp --context")
	fl.Float64Var(&opts.TimeScale, "time-scale", 1, "wait `F` times the recorded time between turns and messages (0: no waiting)")
	addWaitFlags(fl, &opts.Timeout, &opts.StopGrace)
	fl.BoolVar(&opts.JSON, "json", false, "report as JSON")
	fl.SortFlags = false
	return cmd
}

// runReplay replays the recording and writes the report. A recording that
// cannot be read exits 2 (the message names file:line and field); a replay
// that fails exits 1 after the report of what ran.
func runReplay(ctx context.Context, o *replayOptions) error {
	rec, err := readRecording(o)
	if err != nil {
		return &cmdutil.ExitError{Code: ExitUsage, Err: err}
	}
	opts := procedure.ReplayOptions{TimeScale: o.TimeScale, CallTimeout: o.Timeout}
	if o.Context != "" {
		f, err := os.OpenFile(o.Context, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return &cmdutil.ExitError{Code: ExitUsage, Err: fmt.Errorf("--context: %w", err)}
		}
		defer f.Close()
		opts.Context = f
	}
	c, err := procedure.Start(o.Command, o.IO.Err, nil)
	if err != nil {
		return err
	}
	rep, runErr := procedure.Replay(ctx, c, rec, opts)
	closeErr := c.Close(o.StopGrace)
	if o.JSON {
		err = rep.WriteJSON(o.IO.Out)
	} else {
		err = rep.WriteText(o.IO.Out)
	}
	return errors.Join(runErr, closeErr, err)
}

// readRecording reads the session log, or the simulation of the results
// file.
func readRecording(o *replayOptions) (*procedure.Recording, error) {
	if o.Tau2 == "" {
		ep, err := episode.ReadLog(o.Log, episode.Options{})
		if err != nil {
			return nil, err
		}
		return procedure.NewRecording(o.Log, ep), nil
	}
	eps, err := episode.ReadTau2File(o.Tau2, episode.Tau2Options{})
	if err != nil {
		return nil, err
	}
	var found []*episode.Episode
	for _, ep := range eps {
		_, sim, _ := strings.Cut(ep.ID, "#")
		if sim == o.Sim {
			found = []*episode.Episode{ep}
			break
		}
		if strings.HasPrefix(sim, o.Sim) {
			found = append(found, ep)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s: no simulation %s", o.Tau2, o.Sim)
	case 1:
		_, sim, _ := strings.Cut(found[0].ID, "#")
		return procedure.NewRecording(o.Tau2+"#"+sim, found[0]), nil
	}
	var ids []string
	for _, ep := range found {
		_, sim, _ := strings.Cut(ep.ID, "#")
		ids = append(ids, sim)
	}
	return nil, fmt.Errorf("%s: --sim %s names %d simulations (%s): give more of the id", o.Tau2, o.Sim, len(found), strings.Join(ids, ", "))
}
