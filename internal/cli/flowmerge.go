package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/learn"
)

// newCmdFlow is hoist flow, the parent of the commands that work on flow
// files as a whole.
func newCmdFlow(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "flow COMMAND",
		Short: "Work on flow files: merge the flows of shards",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdFlowMerge(f, nil))
	return cmd
}

// flowMergeOptions are hoist flow merge's inputs.
type flowMergeOptions struct {
	IO    iostreams.Streams
	Files []string
	Out   string
	Quiet bool
	// Shard keeps the shards' partial counts or tables in the merge, so it
	// merges again (--shard).
	Shard bool
}

func newCmdFlowMerge(f *Factory, runF func(context.Context, *flowMergeOptions) error) *cobra.Command {
	opts := &flowMergeOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "merge FLOW... --out FILE",
		Short: "Add up flows learned from shards of the sessions into one",
		Long: `hoist flow merge adds up the flows hoist learn --shard wrote for shards of
the sessions (by domain, date or host, on one machine or as the tasks of a
cluster job) into the flow of all of them, byte for byte what hoist learn
writes from every session at once, arbiter included, however the sessions
were split. docs/scale.md shows the pattern.

Each shard's flow carries its partial counts; the merge adds them. When the
flow has an arbiter to fit (two folds or more, not --habit-only), the
merge writes the counts' flow with their sum and says so: replay each shard
with it (hoist learn --shard --counts MERGED) and merge the flows of their
training tables, which fits the arbiter. --shard keeps the sum in any
merge, so that it merges again with more shards.

Flows learned without --shard merge by adding their counts, as each kept
them (learn them with --min-support 1, each task in one shard); flows with
an arbiter are refused, since its weights do not add.

The flows must agree on --domain, --folds and --min-support, and none may
be promoted: promote the merge instead. The output is written atomically.

Exit codes: 0 done; 1 a flow could not be read or merged, named on stderr
with the field; 2 bad flags or arguments.`,
		Example: `  hoist learn --store day1.db --domain retail --shard -o day1.counts.json
  hoist learn --store day2.db --domain retail --shard -o day2.counts.json
  hoist flow merge day1.counts.json day2.counts.json --out retail.counts.json
  hoist learn --store day1.db --shard --counts retail.counts.json -o day1.table.json
  hoist learn --store day2.db --shard --counts retail.counts.json -o day2.table.json
  hoist flow merge day1.table.json day2.table.json --out retail.flow.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if opts.Out == "" {
				return &FlagError{errors.New("--out: want a file, or - for standard output")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runFlowMerge(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Out, "out", "o", "", "write the merged flow to `FILE` (- for standard output)")
	fl.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but the command's output and errors")
	fl.BoolVar(&opts.Shard, "shard", false, "keep the shards' partial counts or tables in the merge, so it merges again with other shards")
	return cmd
}

func runFlowMerge(_ context.Context, o *flowMergeOptions) error {
	fs := make([]*flow.Flow, len(o.Files))
	for i, name := range o.Files {
		f, err := flow.Load(name)
		if err != nil {
			return err
		}
		fs[i] = f
	}
	var m *flow.Flow
	var merged *learn.Merged
	var err error
	if slices.ContainsFunc(fs, func(f *flow.Flow) bool { return f.Shard != nil }) {
		if merged, err = learn.MergeShards(fs, o.Shard); err == nil {
			m = merged.Flow
		}
	} else {
		m, err = flow.Merge(fs...)
	}
	var me *flow.MergeError
	if errors.As(err, &me) {
		file := ""
		if me.Index >= 0 {
			file = o.Files[me.Index]
		}
		return &flow.FieldError{File: file, Field: me.Field, Err: me.Err}
	}
	if err != nil {
		return err
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	where, err := writeOut(o.IO.Out, o.Out, data)
	if err != nil {
		return err
	}
	if o.Quiet {
		return nil
	}
	switch {
	case merged == nil:
		fmt.Fprintf(o.IO.Err, "hoist: merged %d flows: %d sites from %d episodes of %d tasks; wrote %s\n",
			len(fs), len(m.Sites), m.Learned.Episodes, m.Learned.Tasks, where)
	case merged.Counts:
		next := ""
		if merged.Pending {
			next = fmt.Sprintf("; its arbiter is yet to fit: run hoist learn --shard --counts %s on every shard, then hoist flow merge their flows", where)
		}
		fmt.Fprintf(o.IO.Err, "hoist: merged the counts of %d shards: %d sites from %d episodes of %d tasks; wrote %s%s\n",
			len(fs), len(m.Sites), m.Learned.Episodes, m.Learned.Tasks, where, next)
	case merged.Pending:
		fmt.Fprintf(o.IO.Err, "hoist: merged the training tables of %d shards: %d of the %d episodes replayed; wrote %s\n",
			len(fs), merged.Replayed, merged.Of, where)
	default:
		arb := "no arbiter (no offer to fit)"
		if a := m.Arbiter; a != nil {
			arb = fmt.Sprintf("arbiter fitted on %d offers, out-of-fold ECE %.3f", a.Fit.Offers, a.Fit.ECE)
		}
		fmt.Fprintf(o.IO.Err, "hoist: merged the training tables of %d shards: %d sites from %d episodes of %d tasks; %s; wrote %s\n",
			len(fs), len(m.Sites), m.Learned.Episodes, m.Learned.Tasks, arb, where)
	}
	return nil
}
