package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/oraclecli"
	"github.com/hoist-mcp/hoist/learn"
	"github.com/hoist-mcp/hoist/store"
)

// learnFlags are the flags learn and compile share.
type learnFlags struct {
	Domain     string
	Out        string
	HabitOnly  bool
	Folds      int
	MinSupport int
}

func addLearnFlags(cmd *cobra.Command, o *learnFlags) {
	fl := cmd.Flags()
	fl.StringVar(&o.Domain, "domain", "", "learn from the episodes of this `DOMAIN` and name the flow after it (needed when the store holds several domains)")
	fl.StringVarP(&o.Out, "out", "o", "-", "write the flow to `FILE` (- for standard output)")
	fl.BoolVar(&o.HabitOnly, "habit-only", false, "write a flow without an arbiter (served with reach)")
	fl.IntVar(&o.Folds, "folds", learn.DefaultFolds, "split counts into `K` folds by task, so no task is served by counts learned from itself (1: none)")
	fl.IntVar(&o.MinSupport, "min-support", learn.DefaultMinSupport, "the least `N` matches a binding needs, and occurrences a site needs to be served")
}

func (o *learnFlags) check() error {
	if o.Folds < 1 || o.Folds > 1000 {
		return &FlagError{fmt.Errorf("--folds %d: want 1 to 1000", o.Folds)}
	}
	if o.MinSupport < 1 {
		return &FlagError{fmt.Errorf("--min-support %d: want at least 1", o.MinSupport)}
	}
	if o.Out == "" {
		return &FlagError{errors.New("--out: want a file, or - for standard output")}
	}
	return nil
}

func (o *learnFlags) options() learn.Options {
	return learn.Options{Domain: o.Domain, Folds: o.Folds, MinSupport: o.MinSupport, HabitOnly: o.HabitOnly}
}

// learnOptions are hoist learn's inputs.
type learnOptions struct {
	IO iostreams.Streams
	storeOptions
	learnFlags
	// Shard learns one shard for hoist flow merge (--shard): its partial
	// counts, or with Counts (--counts FILE) its training table, replayed
	// with the merged counts in FILE.
	Shard  bool
	Counts string
	// Oracle are the System-One model's flags; UseOracle says --oracle was
	// given: without it, learn asks nothing and fits no "oracle" weight.
	Oracle    oraclecli.Flags
	UseOracle bool
	getenv    func(string) string // nil: os.Getenv
}

func newCmdLearn(f *Factory, runF func(context.Context, *learnOptions) error) *cobra.Command {
	opts := &learnOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "learn --sessions DIR --domain D --out FILE [flags]",
		Short: "Learn a flow from recorded sessions",
		Long: `hoist learn reads the episodes in the store and writes a flow: after each
of the agent's calls (a site: the tool that just returned, and whether it
failed), which read tools of the same server the agent looked up before its
next write (reach) and in its next LLM turn (habit), and where each of their
arguments came from: the whole result text, a path into that result or an
earlier one (nested members, list elements, every element of a list), the
site's own arguments, a text's lines, a template of several parts, an array
collected from a list, what the customer said (sessions recorded with
hoist-mcp --context: the element of a list they named, or a value of the
shape the argument takes), or a constant, with how often each binding
reproduced the agent's own arguments. A path that met the same value in
every episode is learned as that constant: it found it by chance. Each
lookup also gets the condition on the site's result that best tells when
the agent makes it (a predicate), when one passes a strict test in more
than one fold, and the mean size of its results. It pins each tool's input
contract from tools/list, so the proxy stops looking up a tool whose server
changed it.

Counts are split into --folds folds by task (the τ²-bench task id when known,
else the host session); hoist-mcp --flow serves a task the counts of the
other folds only. With two folds or more, learn then replays the episodes
with the flow, each task served the other folds' counts, and fits the
arbiter: one calibrated probability that the agent makes an offered call,
from reach, habit, the binding, the predicate and the binding's form, with
weights per fold (--habit-only leaves it out). The same episodes give a
byte-identical flow.

--shard learns one shard of the sessions for hoist flow merge: the flow of
the shard, carrying its partial counts (every binding, condition and task it
met, untrimmed) in its "shard" member. hoist flow merge adds the shards'
counts into the flow of all their episodes. The arbiter is fitted on a
replay of every episode with that merged flow, so it takes a second pass:
--shard --counts MERGED replays the shard's episodes with the merged flow
and writes their training table, and hoist flow merge of every shard's
table fits the arbiter. However the sessions are split, the result is the
flow hoist learn writes from all of them at once, byte for byte
(docs/scale.md). docs/flow.md explains every field; hoist flow-show
renders it for review.

--oracle jev|replay|mock puts the flow's question to the System-One model
about every offer of the arbiter's replay (after this call, will the agent
use this lookup before it changes anything?), at most 300 per episode, and
fits its answer as one more input, "oracle": hoist-mcp serving the flow then
asks it too, within --flow-questions. The answers are cached in
--oracle-cache, so learning again gives the same flow, and --oracle replay
learns again from the cache alone. Without --oracle nothing is asked.
docs/privacy.md says what the questions send.

` + storeHelp + `

` + exitHelp,
		Example: `  hoist learn --sessions ~/.hoist/logs --domain retail --out retail.flow.json
  hoist learn --store episodes.db --domain airline --folds 10 --min-support 5 -o airline.flow.json
  hoist learn --sessions ~/.hoist/logs --domain retail --oracle jev \
      --oracle-url http://127.0.0.1:8000/v1 --oracle-model jev-1 -o retail.flow.json
  hoist learn --sessions ~/.hoist/logs --domain retail --oracle replay --oracle-model jev-1 -o retail.flow.json
  hoist flow-show retail.flow.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.storePath(); err != nil {
				return err
			}
			if err := opts.learnFlags.check(); err != nil {
				return err
			}
			if opts.Counts != "" && !opts.Shard {
				return &FlagError{errors.New("--counts: needs --shard")}
			}
			if err := opts.checkOracle(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runLearn(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	addLearnFlags(cmd, &opts.learnFlags)
	cmd.Flags().BoolVar(&opts.Shard, "shard", false, "learn one shard for hoist flow merge: its flow with its partial counts (docs/scale.md)")
	cmd.Flags().StringVar(&opts.Counts, "counts", "", "with --shard: replay the shard with the merged counts in `FILE` (hoist flow merge's) and write its training table for the arbiter")
	opts.Oracle.Add(cmd.Flags())
	return cmd
}

// checkOracle reads the oracle's flags: the others need --oracle, which
// needs an arbiter to fit.
func (o *learnOptions) checkOracle(cmd *cobra.Command) error {
	o.UseOracle = cmd.Flags().Changed("oracle")
	if !o.UseOracle {
		for _, name := range []string{"oracle-url", "oracle-model", "oracle-cache"} {
			if cmd.Flags().Changed(name) {
				return &FlagError{fmt.Errorf("--%s: needs --oracle", name)}
			}
		}
		return nil
	}
	if o.HabitOnly || o.Shard {
		return &FlagError{errors.New("--oracle: its answers are fitted in the arbiter, which --habit-only and --shard leave out")}
	}
	if err := o.Oracle.Check(); err != nil {
		return &FlagError{err}
	}
	return nil
}

func runLearn(ctx context.Context, o *learnOptions) error {
	db, bad, err := openStore(ctx, o.IO, &o.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.Domain == "" {
		if err := oneDomain(ctx, db); err != nil {
			return err
		}
	}
	start := time.Now()
	filter := episode.Filter{Domain: o.Domain}
	opt := o.options()
	if o.Shard {
		if o.Counts != "" {
			err = learnTable(ctx, o, db)
		} else {
			err = learnShard(ctx, o, db, filter, opt, start)
		}
		if err == nil && bad {
			err = badInputError()
		}
		return err
	}
	f, err := learn.FromSource(ctx, db, filter, opt)
	if err != nil {
		return err
	}
	if !opt.HabitOnly {
		var ao learn.ArbiterOptions
		if o.UseOracle {
			warn := func(msg string) { fmt.Fprintln(o.IO.Err, "hoist: oracle: "+msg) }
			ask, _, unavailable, err := o.Oracle.Open(warn, o.getenv)
			if err != nil {
				return err
			}
			if unavailable != "" && !o.Quiet {
				warn(fmt.Sprintf("the model cannot be asked (%s); answers come from the cache only", unavailable))
			}
			ao.Oracle = ask
		}
		if err := learn.FitArbiterWith(ctx, db, filter, f, ao); err != nil {
			return err
		}
	}
	if err := writeFlow(o.IO, o.Out, f, o.Quiet, time.Since(start)); err != nil {
		return err
	}
	if bad {
		return badInputError()
	}
	return nil
}

// learnShard writes the flow of one shard with its partial counts.
func learnShard(ctx context.Context, o *learnOptions, db *store.DB, filter episode.Filter, opt learn.Options, start time.Time) error {
	l, err := learn.Count(ctx, db, filter, opt)
	if err != nil {
		return err
	}
	f := l.Flow()
	if f.Shard, err = l.ShardOfCounts(); err != nil {
		return err
	}
	return writeFlow(o.IO, o.Out, f, o.Quiet, time.Since(start))
}

// learnTable replays the shard's episodes with the merged counts in
// --counts and writes that flow with the shard's training table.
func learnTable(ctx context.Context, o *learnOptions, db *store.DB) error {
	start := time.Now()
	cf, err := flow.Load(o.Counts)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return &FlagError{fmt.Errorf("--counts %s: "+format, append([]any{o.Counts}, args...)...)}
	}
	switch {
	case cf.Arbiter != nil:
		return bad("has its arbiter already")
	case !learn.NeedsArbiter(cf):
		return bad("has no arbiter to fit (--habit-only, or one fold): the merge of the counts is the flow")
	case o.Domain != "" && o.Domain != cf.Domain:
		return bad("learned for domain %q, not %q", cf.Domain, o.Domain)
	}
	t, err := learn.ReplayTable(ctx, db, episode.Filter{Domain: cf.Domain}, cf, learn.ArbiterOptions{})
	if err != nil {
		return err
	}
	if t.Episodes() == 0 {
		return errors.New("no episodes to replay" + domainHint(cf.Domain))
	}
	if cf.Shard, err = t.ShardOfTable(); err != nil {
		return err
	}
	data, err := cf.Marshal()
	if err != nil {
		return err
	}
	where, err := writeOut(o.IO.Out, o.Out, data)
	if err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(o.IO.Err, "hoist: replayed %d episodes with the counts of %s in %s; wrote their training table to %s\n",
			t.Episodes(), o.Counts, time.Since(start).Round(time.Millisecond), where)
	}
	return nil
}

// writeFlow writes a learned flow to out (atomically) or standard output,
// and says what it holds on stderr.
func writeFlow(ios iostreams.Streams, out string, f *flow.Flow, quiet bool, took time.Duration) error {
	if f.Learned.Episodes == 0 {
		return errors.New("no episodes to learn from" + domainHint(f.Domain))
	}
	data, err := f.Marshal()
	if err != nil {
		return err
	}
	if out == "-" {
		if _, err := ios.Out.Write(data); err != nil {
			return err
		}
	} else if err := atomicfile.WriteFile(out, data, 0o600); err != nil {
		return err
	}
	if !quiet {
		rule := flow.ServedRule(f, flow.Rule{})
		n := flow.CountSites(f, rule)
		where := out
		if out == "-" {
			where = "standard output"
		}
		arb := "no arbiter"
		if a := f.Arbiter; a != nil {
			arb = fmt.Sprintf("arbiter fitted on %d offers, out-of-fold ECE %.3f", a.Fit.Offers, a.Fit.ECE)
		}
		fmt.Fprintf(ios.Err, "hoist: learned %d sites from %d episodes of %d tasks in %s; served by %s at threshold %.1f, %d lookups after %d sites; %s; wrote %s\n",
			n.Sites, f.Learned.Episodes, f.Learned.Tasks, took.Round(time.Millisecond), rule.Decider, rule.Threshold, n.Lookups, n.SitesAct, arb, where)
	}
	return nil
}

func domainHint(domain string) string {
	if domain == "" {
		return ""
	}
	return fmt.Sprintf(" in domain %q (is --domain right?)", domain)
}

// oneDomain refuses to learn one flow from the sessions of several domains,
// which would mix them: it names the domains and their sessions, so the
// user can choose one with --domain.
func oneDomain(ctx context.Context, db *store.DB) error {
	list, err := db.Sessions(ctx, episode.Filter{})
	if err != nil {
		return err
	}
	count := map[string]int{}
	for _, s := range list {
		count[s.Domain]++
	}
	if len(count) < 2 {
		return nil
	}
	names := slices.Sorted(maps.Keys(count))
	parts := make([]string, len(names))
	for i, d := range names {
		name := d
		if d == "" {
			name = "(none)"
		}
		parts[i] = fmt.Sprintf("%s (%s)", name, plural(count[d], "session", "sessions"))
	}
	return &FlagError{fmt.Errorf("the store holds sessions of %d domains: %s; choose one with --domain", len(names), strings.Join(parts, ", "))}
}

// writeOut writes a flow file's bytes to path, atomically, or to out when
// path is "-", and says where they went.
func writeOut(out io.Writer, path string, data []byte) (where string, err error) {
	if path == "-" {
		_, err := out.Write(data)
		return "standard output", err
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
