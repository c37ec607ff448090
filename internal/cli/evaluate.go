package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/store"
)

// evaluateOptions are hoist evaluate's inputs.
type evaluateOptions struct {
	IO iostreams.Streams
	storeOptions
	Domain     string
	Rules      []string
	DetourCost float64
	Clip       float64
	Level      float64
	Reps       int
	Seed       uint64
	JSON       bool
	Verbose    bool

	targets []evaluate.Target
}

func newCmdEvaluate(f *Factory, runF func(context.Context, *evaluateOptions) error) *cobra.Command {
	opts := &evaluateOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "evaluate --sessions DIR [--rule RULE]... [flags]",
		Short: "Estimate off-policy what other decision rules would have saved",
		Long: `hoist evaluate reads the flow logs of sessions recorded with
hoist-mcp --flow FLOW --flow-explore EPSILON (served, or with --flow-shadow)
and estimates, without serving them, what other decision rules would have
earned in the same sessions: other thresholds, the habit decider instead of
reach, greedy (take the best bound lookup whatever its score), never look
anything up. Exploration is what makes this possible: each decision logged
the probability of what it took, so sessions where the logging rule
happened to act as another rule would are weighted up (importance
sampling).

Reward. Each decision is scored from what the agent then did. Handing back
(stop) earns 0. A lookup is a hit when the agent itself made the same call
(same tool on the same server, arguments equal as JSON) after the call
whose result the flow ran on and before its next write; a hit earns 1/k,
where k is the number of calls the agent made in the LLM turn of that call
(the proxy's own lookups in it do not count), so a turn all of whose calls
were looked up earns 1: one LLM turn saved. Any other lookup is a detour
and earns minus --detour-cost (by default the serving threshold, 0.3: a
detour costs 0.3 of a saved turn). The value of a rule is the expected
reward of a session under it, in saved turns per session.

Why the session. A session's runs are not independent: a lookup taken in
one run is not offered again until a write, the session's lookup cap spans
its runs, and when the flow is served the agent sees what was looked up
and may call otherwise. So each decision is weighted by the probability
ratios of every decision of its session made before its reward was known
(in shadow, up to itself), and the bootstrap resamples sessions.

Served or shadow. In shadow the agent never sees a lookup, so a hit is a
lookup that would have saved the call. Served, an agent that uses a
looked-up result skips its own call, so a served lookup earns what hoist
audit says it earned (docs/audit.md, "Served sessions"): its share of the
turns saved, minus --detour-cost times the chance it was no hit, at the
estimate; the summary gives each rule's IPS value with those rewards at
their lower and upper bounds too (--json: results[].served).

Estimates, for each rule: IPS (the mean over sessions of each decision's
reward times its weight), SNIPS (the sessions' weighted rewards divided by
their weights), DR (doubly robust: a direct-method model of each lookup's
hit rate, corrected by the weighted residuals), and IPS and DR with every
weight capped at --clip λ. Each comes with a --level bootstrap interval
over sessions (bias-corrected and accelerated; --reps replicates, --seed).
With every rule: n (sessions), the effective sample size (Σw)²/Σw² of the
sessions' weights, the largest weight and its share, the share of sessions
clipped, the least logged propensity of the sessions it uses, and the
decisions that cannot be evaluated: the rule would take an action the
logging rule could not (for instance stop where the logging rule always
looks up), or a run of the session could not be matched to its call.
docs/evaluate.md gives every formula.

Rules (--rule, repeatable): never; greedy; DECIDER:THRESHOLD[:EPSILON] with
DECIDER reach or habit, e.g. reach:0.5, habit:0.3, reach:0.2:0.1. Without
--rule: never, reach at 0 0.1 0.2 0.3 0.5 0.7, habit at 0.1 0.3 0.5, and
the logging rule without its exploration when it is none of those.

On a terminal the estimates are a table, with a summary and warnings
above; in a pipe the same columns separated by tabs under a header line,
the summary on stderr. --json prints one JSON object, the same on a terminal and in a pipe.

` + storeHelp + `

` + exitHelp,
		Example: `  hoist-mcp --record logs --flow retail.flow.json --flow-shadow --flow-explore 0.3 -- my-server
  hoist evaluate --sessions logs
  hoist evaluate --sessions logs --rule reach:0.5 --rule habit:0.3 --rule never --detour-cost 0.5
  hoist evaluate --store episodes.db --json | jq '.results[] | {rule, dr: .estimates[3]}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.storePath(); err != nil {
				return err
			}
			for _, r := range opts.Rules {
				t, err := evaluate.ParseTarget(r)
				if err != nil {
					return &FlagError{fmt.Errorf("--rule: %w", err)}
				}
				opts.targets = append(opts.targets, t)
			}
			switch {
			case opts.DetourCost < 0 || math.IsNaN(opts.DetourCost) || math.IsInf(opts.DetourCost, 0):
				return &FlagError{fmt.Errorf("--detour-cost %v: want a number of saved turns, 0 or more", opts.DetourCost)}
			case opts.Clip < 0 || math.IsNaN(opts.Clip):
				return &FlagError{fmt.Errorf("--clip %v: want a weight cap above 0, or 0 for none", opts.Clip)}
			case !(opts.Level > 0 && opts.Level < 1):
				return &FlagError{fmt.Errorf("--level %v: want a confidence level between 0 and 1", opts.Level)}
			case opts.Reps < 100 || opts.Reps > 1_000_000:
				return &FlagError{fmt.Errorf("--reps %d: want 100 to 1000000", opts.Reps)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runEvaluate(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	fl := cmd.Flags()
	fl.StringVar(&opts.Domain, "domain", "", "only sessions of this `DOMAIN`")
	fl.StringArrayVar(&opts.Rules, "rule", nil, "a `RULE` to estimate (repeatable): never, greedy, or DECIDER:THRESHOLD[:EPSILON]")
	fl.Float64Var(&opts.DetourCost, "detour-cost", evaluate.DefaultDetourCost, "a detour's `COST`, in saved LLM turns")
	fl.Float64Var(&opts.Clip, "clip", evaluate.DefaultClip, "cap the clipped estimators' weights at `LAMBDA` (0: no clipped estimates)")
	fl.Float64Var(&opts.Level, "level", evaluate.DefaultLevel, "the intervals' confidence `LEVEL`")
	fl.IntVar(&opts.Reps, "reps", evaluate.DefaultReps, "bootstrap replicates `B`")
	fl.Uint64Var(&opts.Seed, "seed", 1, "seed of the bootstrap's random source")
	fl.BoolVar(&opts.JSON, "json", false, "print a JSON object")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "list every rule's warnings, not only how many rules have each")
	return cmd
}

// flowSource adapts the store to evaluate.Source: the episodes that have
// decisions (with all, every episode), each run's decisions read from
// their logged lines, beside what its run line says. evaluate and promote
// read the store through it alike.
type flowSource struct {
	db     *store.DB
	filter episode.Filter
	all    bool
	// decided, when set, sees each decision read, with its run's fold, and
	// may change it (hoist promote --oracle-cache).
	decided func(d *flow.Decision, fold int)
}

var _ evaluate.Source = (*flowSource)(nil)

func (s *flowSource) Sessions(ctx context.Context, fn func(evaluate.Session) error) error {
	read := s.db.FlowEpisodes
	if s.all {
		read = s.db.EpisodesWithFlows
	}
	return read(ctx, s.filter, func(ep *episode.Episode, fl *store.Flow) error {
		type key struct{ server, run int }
		lines := map[key]*store.Run{}
		for i := range fl.Runs {
			r := &fl.Runs[i]
			lines[key{r.Server, r.Index}] = r
		}
		sess := evaluate.Session{Episode: ep}
		last := key{-1, -1}
		for _, d := range fl.Decisions {
			if k := (key{d.Server, d.Run}); k != last {
				r := evaluate.Run{Server: d.Server}
				if l := lines[k]; l != nil {
					r.Call, r.Failed, r.MaxLookups = l.Call, l.Failed, l.MaxLookups
				}
				sess.Runs = append(sess.Runs, r)
				last = k
			}
			if s.decided != nil {
				fold := -1
				if l := lines[key{d.Server, d.Run}]; l != nil {
					fold = l.Fold
				}
				s.decided(&d.FlowDecision, fold)
			}
			sess.Runs[len(sess.Runs)-1].Decisions = append(sess.Runs[len(sess.Runs)-1].Decisions, d.FlowDecision)
		}
		return fn(sess)
	})
}

func runEvaluate(ctx context.Context, o *evaluateOptions) error {
	db, bad, err := openStore(ctx, o.IO, &o.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	src := &flowSource{db: db, filter: episode.Filter{Domain: o.Domain}}
	clip := o.Clip
	if clip == 0 {
		clip = math.Inf(1)
	}
	rep, err := evaluate.Evaluate(ctx, src, evaluate.Options{
		Targets: o.targets, Reward: evaluate.Reward{DetourCost: o.DetourCost},
		Clip: clip, Level: o.Level, Reps: o.Reps, Seed: o.Seed,
	})
	if errors.Is(err, evaluate.ErrNoDecisions) {
		return fmt.Errorf("%w%s", err, domainHint(o.Domain))
	}
	if err != nil {
		return err
	}
	switch {
	case o.JSON:
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	case iostreams.IsTerminal(o.IO.Out):
		printEvaluateSummary(o.IO.Out, rep, o.Verbose)
		printEvaluateTable(o.IO.Out, rep, true)
	default:
		if !o.Quiet {
			printEvaluateSummary(o.IO.Err, rep, o.Verbose)
		}
		printEvaluateTable(o.IO.Out, rep, false)
	}
	if bad {
		return badInputError()
	}
	return nil
}

func printEvaluateSummary(w io.Writer, rep *evaluate.Report, verbose bool) {
	fmt.Fprintf(w, "%d sessions, %d runs, %d decisions", rep.Sessions, rep.Runs, rep.Decisions)
	if rep.Logged.Shadow > 0 {
		fmt.Fprintf(w, " (%d in shadow)", rep.Logged.Shadow)
	}
	if rep.Unusable > 0 {
		fmt.Fprintf(w, "; %d decisions left out with their sessions, a run of which could not be scored", rep.Unusable)
	}
	fmt.Fprintln(w)
	var rules []string
	for _, r := range rep.Logged.Rules {
		rules = append(rules, fmt.Sprintf("%s≥%g ε=%g (%d)", r.Decider, float64(r.Threshold), float64(r.Epsilon), r.Decisions))
	}
	fmt.Fprintf(w, "logged under %s: %d lookups, %d hits; value as logged %s %s per session\n",
		strings.Join(rules, ", "), rep.Logged.Lookups, rep.Logged.Hits, fmtNum(rep.Logged.Value), fmtCI(rep.Logged.Lo, rep.Logged.Hi))
	explored := false
	for _, r := range rep.Logged.Rules {
		explored = explored || r.Epsilon > 0
	}
	if !explored {
		fmt.Fprintln(w, "warning: no decision was explored (--flow-explore 0): only rules that act as the logging rule did can be evaluated")
	}
	if sv := rep.Logged.Served; sv != nil {
		sessions := "1 session"
		if sv.Sessions != 1 {
			sessions = fmt.Sprintf("%d sessions", sv.Sessions)
		}
		fmt.Fprintf(w, "served: in %s the proxy made %d lookups of its own: hits %s, LLM turns saved %s (estimate (lower–upper bound), as hoist audit judges them)\n",
			sessions, sv.Lookups, boundsText(sv.Hits), boundsText(sv.Saved))
	}
	if sv := servedRules(rep.Results); sv != "" {
		fmt.Fprintf(w, "served estimates: the rules' values score each lookup of a served session by what it earned (its estimate, as hoist audit judges it), so they lie between their values with every such lookup at its lower and at its upper bound; IPS: %s\n", sv)
	}
	if rep.Logged.Mismatch > 0 {
		fmt.Fprintf(w, "warning: %d logged propensities differ from their rule's (wrong logging?)\n", rep.Logged.Mismatch)
	}
	servedReward := ""
	if rep.Logged.Served != nil {
		servedReward = " (a served lookup: its share of the turns saved, less the detour cost times the chance it was no hit)"
	}
	fmt.Fprintf(w, "reward: hit +1/k (k of the agent's calls in its turn), detour -%g, stop 0%s; value per session; clip λ=%s; %g%% BCa bootstrap over sessions, %d replicates, seed %d\n",
		float64(rep.DetourCost), servedReward, fmtNum(rep.Clip), 100*float64(rep.Level), rep.Reps, rep.Seed)
	writeRuleWarnings(w, rep.Results, verbose)
	fmt.Fprintln(w)
}

// servedRules lists the rules whose values rest on served lookups'
// estimates, each with its IPS value and bounds.
func servedRules(results []evaluate.Result) string {
	var parts []string
	for _, r := range results {
		if sv := r.Served; sv != nil {
			parts = append(parts, fmt.Sprintf("%s %.3g (%.3g–%.3g)", r.Rule, sv.IPS.Est, sv.IPS.Lo, sv.IPS.Hi))
		}
	}
	return strings.Join(parts, ", ")
}

// boundsText writes an estimate with its bounds: "3.0 (1.0–3.0)".
func boundsText(b earned.Bounds) string {
	return fmt.Sprintf("%.1f (%.1f–%.1f)", b.Est, b.Lo, b.Hi)
}

// writeRuleWarnings writes the rules' warnings grouped by kind, with how
// many rules have each and the first of them; verbose lists every rule's.
func writeRuleWarnings(w io.Writer, results []evaluate.Result, verbose bool) {
	if verbose {
		for _, r := range results {
			for _, warn := range r.Warnings {
				fmt.Fprintf(w, "warning: %s: %s\n", r.Rule, warn)
			}
		}
		return
	}
	type group struct {
		rules []string
		first string
	}
	groups := map[string]*group{}
	var order []string
	for _, r := range results {
		for _, warn := range r.Warnings {
			k := warningKind(warn)
			g := groups[k]
			if g == nil {
				g = &group{first: warn}
				groups[k] = g
				order = append(order, k)
			}
			g.rules = append(g.rules, r.Rule)
		}
	}
	for _, k := range order {
		g := groups[k]
		if len(g.rules) == 1 {
			fmt.Fprintf(w, "warning: %s: %s\n", g.rules[0], g.first)
			continue
		}
		fmt.Fprintf(w, "warning: %d rules (%s … %s): %s (%s's; --verbose lists each rule's)\n", len(g.rules), g.rules[0], g.rules[len(g.rules)-1], g.first, g.rules[0])
	}
}

// warningKind is a warning without its figures: what groups it with the
// same warning of other rules.
func warningKind(warn string) string {
	var b strings.Builder
	for _, f := range strings.Fields(warn) {
		if strings.ContainsAny(f, "0123456789") {
			f = "N"
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f)
	}
	return b.String()
}

func printEvaluateTable(w io.Writer, rep *evaluate.Report, tty bool) {
	var out io.Writer = w
	var tw *tabwriter.Writer
	if tty {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		out = tw
	}
	// The header in a pipe too: TSV a program reads by column name.
	fmt.Fprintf(out, "RULE\tESTIMATOR\tVALUE\t%g%% INTERVAL\tN\tESS\tMAX W\tMAX SHARE\tCLIPPED\tMIN P\tUNEVALUABLE\n", 100*float64(rep.Level))
	for _, r := range rep.Results {
		for _, e := range r.Estimates {
			name := e.Estimator
			if !math.IsNaN(float64(e.Clip)) {
				if math.IsInf(float64(e.Clip), 1) {
					continue // --clip 0: no clipped estimates
				}
				name = fmt.Sprintf("%s λ=%s", strings.TrimSuffix(name, " clipped"), fmtNum(e.Clip))
			}
			d := r.Diagnostics
			fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Rule, name, fmtNum(e.Value), fmtCI(e.Lo, e.Hi),
				d.N, fmtNum(d.ESS), fmtNum(d.MaxWeight), fmtPct(d.MaxShare), fmtPct(d.ClippedShare), fmtNum(d.MinPropensity), d.Unevaluable)
		}
	}
	if tw != nil {
		tw.Flush()
	}
}

func fmtNum(n evaluate.Num) string {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return "-"
	case math.IsInf(f, 1):
		return "∞"
	}
	return fmt.Sprintf("%.3g", f)
}

func fmtPct(n evaluate.Num) string {
	if math.IsNaN(float64(n)) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n))
}

func fmtCI(lo, hi evaluate.Num) string {
	if math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)) {
		return "[-]"
	}
	return fmt.Sprintf("[%.3f, %.3f]", float64(lo), float64(hi))
}
