package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/atomicfile"
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
		Long: `hoist flow merge adds up flows that hoist learn wrote for shards of the
sessions (by domain, date, host or task, on one machine or as the tasks of
a cluster job) into the flow of all of them: the counts of every site,
lookup and binding, fold by fold, and what they were learned from
(episodes, tasks and digests add up, sources join, the date is the
latest). docs/scale.md shows the pattern.

Learn the shards with --min-support 1 and split them so that each task
(τ²-bench task, else host session) is in one shard: the merge is then the
flow hoist learn writes from every session at once, byte for byte. With a
higher --min-support, each shard keeps only the bindings it matched that
often, and the merge counts only what the shards kept.

The flows must agree on --domain, --folds and --min-support, and none may
be promoted: promote the merge instead. The output is written atomically.

Exit codes: 0 done; 1 a flow could not be read or merged, named on stderr;
2 bad flags or arguments.`,
		Example: `  hoist learn --store day1.db --domain retail --min-support 1 -o day1.flow.json
  hoist learn --store day2.db --domain retail --min-support 1 -o day2.flow.json
  hoist flow merge day1.flow.json day2.flow.json --out retail.flow.json`,
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
	where := o.Out
	if o.Out == "-" {
		where = "standard output"
		if _, err := o.IO.Out.Write(data); err != nil {
			return err
		}
	} else if err := atomicfile.WriteFile(o.Out, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", o.Out, err)
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
