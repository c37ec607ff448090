package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/oracle/client"
	"github.com/hoist-mcp/hoist/promote"
)

// promoteOptions are hoist promote's inputs.
type promoteOptions struct {
	IO iostreams.Streams
	storeOptions
	Flow        string
	Out         string
	Domain      string
	Threshold   float64
	MinRuns     int
	Level       float64
	Anytime     bool
	OracleCache string
	JSON        bool
}

func newCmdPromote(f *Factory, runF func(context.Context, *promoteOptions) error) *cobra.Command {
	opts := &promoteOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "promote --flow FILE --sessions DIR --out FILE [flags]",
		Short: "Keep only the lookups that paid in shadow or served runs",
		Long: `hoist promote reads the flow logs hoist-mcp --flow FILE --flow-shadow wrote
beside the session logs (ingested into the store with them), scores each
shadow run's decisions against what the agent then did, and writes a copy of
the flow that acts only at the sites whose lookups paid. Runs of sessions
that served the flow (hoist-mcp --flow, not --flow-shadow) are scored too,
each lookup by what it earned, as hoist audit judges it (docs/audit.md,
"Served sessions"): its share of the LLM turns saved, minus --threshold
times the chance it was no hit, at the estimate; the report gives each
site's hits and turns saved with their bounds.

A site pays by hoist evaluate's reward: a lookup the agent then made itself,
after the site and before its next write, saves 1/k of an LLM turn (k the
agent's calls in that turn); any other lookup is a detour and costs
--threshold, the ratio of a detour's cost to a saved turn (hoist-mcp's
--flow-threshold; evaluate's --detour-cost). So a lookup pays when its hit
rate is above the break-even t/(1/k + t): 0.23 for t = 0.3 and turns of one
call, 0.375 for turns of two. The rule scored is the one the shadow runs
were logged under, without its exploration (the flow as it will serve):
lookups a run took only because it explored (--flow-explore) count for
nothing, and the rule's own are weighted by their propensities.

A session's runs at a site are one observation (they are not
independent): the mean value of its runs, in saved turns. A site is
promoted when it had at least --min-runs runs and the lower
confidence bound of its value, at --level, is above zero. Every other site
is marked "promoted": false with its reason: too few runs; would not pay;
or contract changed (a tool it looks up is now a write, or its server lists
another input contract than the flow pinned). hoist-mcp serving the
promoted flow hands back after a call whose site was not promoted, and logs
the reason with that decision.

The bound is for one look at the data. To run promote again after every
batch of shadow sessions and act on the first promotion, pass --anytime:
the bound is then a confidence sequence, which holds at every batch at
once, so a site that does not pay is promoted with probability at most
1 − --level however often promote runs. It is wider, and reads the
sessions in the order they started.

The report, per site, goes to standard output: runs, the rule's lookups
(and the explored ones left out), hits, hit rate and break-even, value and
its lower bound, and the decision (--json for scripts). docs/audit.md gives
every formula.

A flow whose arbiter weighs the System-One model's answers (hoist learn
--oracle) logs, with each offer, its question's cache key and the answer it
got, if any. --oracle-cache DIR (hoist-mcp's cache, or a copy) re-decides
the shadow runs from the answers that cache holds, as --oracle replay
would: an offer whose question is cached gets that answer, the arbiter's
probability is computed again with it (in the run's fold), and the rule's
choices are scored from there. So answers cached after the shadow runs (a
question that went unanswered live: the key unset, the budget spent, a
timeout) count. Nothing is sent to a model. Without --oracle-cache the
logged decisions are scored as they are.

` + storeHelp + `

` + exitHelp,
		Example: `  hoist-mcp --record ~/.hoist/logs --flow retail.flow.json --flow-shadow -- my-server
  hoist promote --flow retail.flow.json --sessions ~/.hoist/logs --out retail.promoted.flow.json
  hoist promote --flow retail.flow.json --store episodes.db --min-runs 30 --json -o promoted.json
  hoist promote --flow retail.flow.json --sessions ~/.hoist/logs --anytime --out retail.promoted.flow.json   # after every batch
  hoist promote --flow retail.flow.json --sessions ~/.hoist/logs --oracle-cache ~/.hoist/oracle-cache -o retail.promoted.flow.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.storePath(); err != nil {
				return err
			}
			if opts.Flow == "" {
				return &FlagError{errors.New("--flow: name the flow that ran in shadow")}
			}
			if opts.Out == "" {
				return &FlagError{errors.New("--out: name the promoted flow's file")}
			}
			if !(opts.Threshold > 0 && opts.Threshold < 1) {
				return &FlagError{fmt.Errorf("--threshold %v: want above 0 and below 1", opts.Threshold)}
			}
			if opts.MinRuns < 1 {
				return &FlagError{fmt.Errorf("--min-runs %d: want at least 1", opts.MinRuns)}
			}
			if !(opts.Level > 0 && opts.Level < 1) {
				return &FlagError{fmt.Errorf("--level %v: want a confidence level between 0 and 1", opts.Level)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPromote(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	fl := cmd.Flags()
	fl.StringVar(&opts.Flow, "flow", "", "the flow `FILE` the shadow runs served")
	fl.StringVarP(&opts.Out, "out", "o", "", "write the promoted flow to `FILE` (- for standard output, then the report goes to stderr)")
	fl.StringVar(&opts.Domain, "domain", "", "score only the sessions of this `DOMAIN`")
	fl.Float64Var(&opts.Threshold, "threshold", flow.DefaultThreshold, "the ratio of a detour's cost to a saved turn")
	fl.IntVar(&opts.MinRuns, "min-runs", promote.DefaultMinRuns, "the least `N` runs a site needs to be promoted")
	fl.Float64Var(&opts.Level, "level", promote.DefaultLevel, "the lower bound's confidence `LEVEL`: a site that does not pay is promoted with probability at most 1 − LEVEL")
	fl.BoolVar(&opts.Anytime, "anytime", false, "bound with a confidence sequence, valid however often promote is run as sessions arrive")
	fl.StringVar(&opts.OracleCache, "oracle-cache", "", "re-decide the shadow runs from the System-One answers cached in `DIR` (hoist-mcp's --oracle-cache; nothing is sent)")
	fl.BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	return cmd
}

func runPromote(ctx context.Context, o *promoteOptions) error {
	f, err := flow.Load(o.Flow)
	if err != nil {
		return err
	}
	db, bad, err := openStore(ctx, o.IO, &o.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	src := &flowSource{db: db, filter: episode.Filter{Domain: o.Domain}, all: true}
	reanswered := 0
	if o.OracleCache != "" {
		cache, err := openReplayCache(o.OracleCache, func(msg string) { fmt.Fprintln(o.IO.Err, "hoist: oracle: "+msg) })
		if err != nil {
			return err
		}
		src.decided = func(d *flow.Decision, fold int) { reanswered += f.Reanswer(d, fold, cache) }
	}
	out, rep, err := promote.Promote(ctx, src, f, promote.Options{
		Threshold: o.Threshold, MinRuns: o.MinRuns, Level: o.Level, Anytime: o.Anytime,
	})
	if err != nil {
		return err
	}
	if rep.ShadowRuns+rep.ServedRuns == 0 {
		return fmt.Errorf("no shadow or served runs to score%s: record sessions with hoist-mcp --flow %s --flow-shadow first", domainHint(o.Domain), o.Flow)
	}
	data, err := out.Marshal()
	if err != nil {
		return err
	}
	w := o.IO.Out
	if o.Out == "-" {
		if _, err := o.IO.Out.Write(data); err != nil {
			return err
		}
		w = o.IO.Err
	} else if err := atomicfile.WriteFile(o.Out, data, 0o600); err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writePromoteText(w, rep)
	}
	if !o.Quiet && o.Out != "-" {
		n := 0
		for _, s := range rep.Sites {
			if s.Promoted {
				n++
			}
		}
		fmt.Fprintf(o.IO.Err, "hoist: promoted %d of %d sites from %s in %d sessions; wrote %s\n", n, len(rep.Sites), promoteRuns(rep), rep.Episodes, o.Out)
	}
	if o.OracleCache != "" && !o.Quiet {
		fmt.Fprintf(o.IO.Err, "hoist: %d offers re-decided from the answers cached in %s\n", reanswered, o.OracleCache)
	}
	if rep.Unmatched > 0 && !o.Quiet {
		fmt.Fprintf(o.IO.Err, "hoist: %d runs could not be placed after a call of their session and were left out\n", rep.Unmatched)
	}
	if bad {
		return badInputError()
	}
	return nil
}

// openReplayCache opens an existing answers' cache to read: a directory
// that is not there is a mistake in the flag, not an empty cache.
func openReplayCache(dir string, warn func(string)) (*client.Cache, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &FlagError{fmt.Errorf("--oracle-cache %s: not a directory", dir)}
	}
	cache, err := client.OpenCache(dir, warn)
	if err != nil {
		return nil, fmt.Errorf("--oracle-cache: %w", err)
	}
	return cache, nil
}

// promoteRuns says how many runs were scored, shadow and served.
func promoteRuns(r *promote.Report) string {
	switch {
	case r.ServedRuns == 0:
		return fmt.Sprintf("%d shadow runs", r.ShadowRuns)
	case r.ShadowRuns == 0:
		return fmt.Sprintf("%d served runs", r.ServedRuns)
	}
	return fmt.Sprintf("%d shadow and %d served runs", r.ShadowRuns, r.ServedRuns)
}

func writePromoteText(w io.Writer, r *promote.Report) {
	bound := "lower bound"
	if r.Anytime {
		bound = "anytime lower bound"
	}
	fmt.Fprintf(w, "Promotion from %s in %d sessions (detour cost %.2f, --min-runs %d, %g%% %s)\n",
		promoteRuns(r), r.Episodes, r.Threshold, r.MinRuns, 100*r.Level, bound)
	if r.ServedRuns > 0 {
		fmt.Fprintln(w, "A served lookup's hit is what it earned: hits and turns saved are estimates (lower–upper bound), as hoist audit judges them.")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "site\truns\tlookups\thits\tturns saved\thit rate\tbreak-even\tvalue (bound)\tpromoted")
	num := func(n promote.Num, format string) string {
		if f := float64(n); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return fmt.Sprintf(format, f)
		}
		return "-"
	}
	for _, s := range r.Sites {
		name := s.Tool
		if s.Failed {
			name += " (failed)"
		}
		lookups := fmt.Sprint(s.Lookups)
		if s.Explored > 0 {
			lookups += fmt.Sprintf(" (+%d explored)", s.Explored)
		}
		value := "-"
		if s.Sessions > 0 {
			value = fmt.Sprintf("%s (%s)", num(s.Value, "%.3f"), num(s.Bound, "%.3f"))
		}
		verdict := "yes"
		if !s.Promoted {
			verdict = "no: " + s.Reason
		}
		hits, saved := fmt.Sprint(s.Hits), fmt.Sprintf("%.1f", s.SavedBounds.Est)
		if s.Served > 0 {
			hits, saved = boundsText(s.HitsBounds), boundsText(s.SavedBounds)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, s.Runs, lookups, hits, saved, num(s.HitRate, "%.2f"), num(s.BreakEven, "%.2f"), value, verdict)
	}
	tw.Flush()
}
