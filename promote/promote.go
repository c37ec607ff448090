// Package promote is hoist promote (issue 6, point 2; issue 18, point 3):
// it scores the decisions of shadow runs (hoist-mcp --flow-shadow's flow
// logs) against what the agent then did, and of served runs by what their
// lookups earned (package earned, through evaluate's reward: the estimate
// hoist audit shows, a hit saving its share of its level's turns and a
// lookup costing t times the chance it was no hit; issue 24), and marks each site of the flow
// promoted, or not with its reason, so that a promoted flow acts only at
// sites whose lookups paid (manual, --flow-shadow and "A promoted flow hands
// back after a call whose site was not promoted, with the reason the site
// is not promoted").
//
// A site pays by the economics hoist evaluate estimates with (its reward,
// evaluate.Reward, read through evaluate.Score): a lookup the agent then
// made itself before its next write saves 1/k of a turn, k the agent's
// calls in that turn, and any other lookup costs the detour cost t
// (--threshold: what a detour costs in saved turns). The rule scored is the
// one the shadow runs were logged under, without its exploration: the flow
// as it will serve. An explored lookup weighs 0 for it, and a lookup after
// an explored decision of its run too, while the rule's own choices weigh
// 1/p (a run's decisions are weighted within the run: W₁:ₜ = Πₛ≤ₜ π/pₛ).
// So a run at a site is worth
//
//	y = Σₜ W₁:ₜ rₜ      (rₜ = 1/k for a hit, −t for a detour)
//
// and a session's runs at the site, which are not independent, are one
// observation: their mean, x. The site's value is the mean of x over the
// sessions that ran it, and a site is promoted when it had at least
// MinRuns shadow runs and the lower confidence bound of that value is
// above zero: the normal bound for one look at the data (stats.MeanLower),
// or with Anytime a confidence sequence (stats.BettingLower), whose bound
// holds however often promote is run again as sessions arrive. A lookup
// pays when its hit rate h is above the break-even t/(c̄ + t), c̄ the mean
// credit 1/k of its hits: 0.23 for t = 0.3 and turns of one call.
//
// promote reads sessions and their flow logs through evaluate.Source, never
// the store.
package promote

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/stats"
)

// Options are promote's settings.
type Options struct {
	// Threshold is what a detour costs in saved turns, the reward's
	// DetourCost (flow.DefaultThreshold when 0): hoist-mcp's
	// --flow-threshold has the same meaning.
	Threshold float64
	// MinRuns is the least number of runs a site needs (DefaultMinRuns
	// when 0).
	MinRuns int
	// Level is the confidence of the lower bound (DefaultLevel when 0): a
	// site that does not pay is promoted with probability at most 1 − Level.
	Level float64
	// Anytime bounds the value with a confidence sequence, valid however
	// often promote is run as sessions arrive, instead of the bound for one
	// look.
	Anytime bool
}

// Defaults of Options.
const (
	DefaultMinRuns = 10
	DefaultLevel   = 0.95
)

// Num is a number that writes NaN and ±Inf as JSON null.
type Num = evaluate.Num

// Site is what the shadow and served runs said of one site of the flow.
type Site struct {
	Tool   string `json:"tool"`
	Failed bool   `json:"failed"`
	// Runs are the runs at the site, Sessions the sessions they were
	// in (the bound's observations).
	Runs     int `json:"runs"`
	Sessions int `json:"sessions"`
	// Lookups are the lookups of those runs the rule makes, Hits those the
	// agent then made itself before its next write; Explored the lookups
	// the runs took only by exploring, which the rule would not make.
	Lookups  int `json:"lookups"`
	Hits     int `json:"hits"`
	Explored int `json:"explored"`
	// ServedRuns are the runs among Runs that served the flow (not in
	// shadow). Served counts their lookups, whose hits are what they
	// earned (package earned: an estimate between bounds, as hoist audit
	// judges them). HitsBounds and SavedBounds sum the hits and turns
	// saved of every lookup of the runs, explored ones too (a shadow
	// lookup's bounds are its count).
	ServedRuns  int             `json:"served_runs"`
	Served      int             `json:"served_lookups"`
	HitsBounds  evaluate.Bounds `json:"hits_bounds"`
	SavedBounds evaluate.Bounds `json:"saved_turns_bounds"`
	// HitRate is the weighted share of the rule's lookups that were hits,
	// BreakEven the hit rate at which a lookup here pays: t/(c̄ + t).
	HitRate   Num `json:"hit_rate"`
	BreakEven Num `json:"break_even"`
	// Value is the site's saved turns per run, Bound its lower confidence
	// bound: the site is promoted when Bound is above zero.
	Value Num `json:"value"`
	Bound Num `json:"value_lcb"`
	// Floor is the least a session's observation here can be, which the
	// confidence sequence needs (see Floor); null without Anytime.
	Floor Num `json:"floor"`
	// Promoted, and else Reason, are the marks written to the flow.
	Promoted bool   `json:"promoted"`
	Reason   string `json:"reason,omitempty"`
}

// Report is what promote did.
type Report struct {
	Episodes int `json:"episodes"`
	// ShadowRuns and ServedRuns count the runs scored; Unmatched the runs of the
	// sessions left out because one of their runs could not be placed
	// after a call of the session.
	ShadowRuns int `json:"shadow_runs"`
	ServedRuns int `json:"served_runs"`
	Unmatched  int `json:"unmatched_runs"`
	// Threshold is the detour cost; Level and Anytime say which bound.
	Threshold float64 `json:"threshold"`
	MinRuns   int     `json:"min_runs"`
	Level     float64 `json:"level"`
	Anytime   bool    `json:"anytime"`
	Sites     []Site  `json:"sites"`
}

type key struct {
	tool   string
	failed bool
}

// tally is what the runs at one site added up to.
type tally struct {
	runs, lookups, hits, explored int
	servedRuns, served            int
	wLookups, wHits, wCredit      float64
	earned, saved                 evaluate.Bounds
	xs                            []float64 // each session's mean run value
}

// add counts one run at the site.
func (t *tally) add(r *evaluate.RunValue) {
	t.runs++
	if !r.Shadow {
		t.servedRuns++
	}
	t.served += r.Served
	t.lookups += r.Lookups
	t.hits += r.Hits
	t.explored += r.Explored
	t.wLookups += r.WLookups
	t.wHits += r.WHits
	t.wCredit += r.WCredit
	t.earned.Add(r.Earned)
	t.saved.Add(r.SavedTurns)
}

// Promote scores the shadow and served runs of the sessions src holds, in the order
// it gives them (the order the confidence sequence reads them in), and
// returns a copy of f with every site marked, and the report.
func Promote(ctx context.Context, src evaluate.Source, f *flow.Flow, opt Options) (*flow.Flow, *Report, error) {
	if opt.Threshold == 0 {
		opt.Threshold = flow.DefaultThreshold
	}
	if opt.MinRuns == 0 {
		opt.MinRuns = DefaultMinRuns
	}
	if opt.Level == 0 {
		opt.Level = DefaultLevel
	}
	rep := &Report{Threshold: opt.Threshold, MinRuns: opt.MinRuns, Level: opt.Level, Anytime: opt.Anytime}
	tallies := map[key]*tally{}
	changed := map[string]string{} // tool → why it may not be looked up any more
	perCall, eps := 0, 0.0         // the largest run budget and ε logged: the floor's
	err := src.Sessions(ctx, func(s evaluate.Session) error {
		rep.Episodes++
		for _, t := range s.Episode.Tools {
			pinned, ok := f.Tools[t.Name]
			switch {
			case !ok || pinned.Kind != episode.Read:
			case t.Kind == episode.Write:
				changed[t.Name] = fmt.Sprintf("%s is now marked readOnlyHint: false", t.Name)
			case pinned.Input != nil && len(t.InputSchema) > 0 && !pinned.Input.Equal(flow.ContractOf(t.InputSchema)):
				changed[t.Name] = fmt.Sprintf("%s's server lists another input contract than the pinned one", t.Name)
			}
		}
		sc, ok := evaluate.Score(s, evaluate.Reward{DetourCost: opt.Threshold})
		if !ok {
			rep.Unmatched += len(s.Runs)
			return nil
		}
		type sum struct {
			n int
			y float64
		}
		here := map[key]*sum{}
		var order []key
		for _, r := range sc.Runs(evaluate.Served) {
			if r.Shadow {
				rep.ShadowRuns++
			} else {
				rep.ServedRuns++
			}
			perCall, eps = max(perCall, r.MaxLookups), math.Max(eps, r.Rule.Epsilon)
			k := key{r.Tool, r.Failed}
			t := tallies[k]
			if t == nil {
				t = &tally{}
				tallies[k] = t
			}
			t.add(&r)
			if here[k] == nil {
				here[k] = &sum{}
				order = append(order, k)
			}
			here[k].n++
			here[k].y += r.Value
		}
		for _, k := range order {
			tallies[k].xs = append(tallies[k].xs, here[k].y/float64(here[k].n))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	out := *f
	out.Sites = slices.Clone(f.Sites)
	for i := range out.Sites {
		s := &out.Sites[i]
		t := tallies[key{s.Tool, s.Failed}]
		if t == nil {
			t = &tally{}
		}
		site := judge(s, t, changed, Floor(opt.Threshold, min(perCall, offers(s, f.MinSupport)), eps), opt)
		promoted := site.Promoted
		s.Promoted, s.Reason = &promoted, site.Reason
		rep.Sites = append(rep.Sites, site)
	}
	if rep.Sites == nil {
		rep.Sites = []Site{}
	}
	return &out, rep, nil
}

// Floor is the least a session's observation at a site can be, when a run
// there takes at most n lookups (offers): a decision the rule agrees with
// weighs at most 1/(1 − ε) more than the one before it, so
//
//	x ≥ −t · Σⱼ₌₁ⁿ (1 − ε)^(−j)
//
// (−t·n without exploration). The logs' largest run budget and ε stand
// for the settings every session was served with.
func Floor(t float64, n int, eps float64) float64 {
	sum, w := 0.0, 1.0
	for range max(n, 1) {
		w /= 1 - eps
		sum += w
	}
	return -t * sum
}

// offers returns the most lookups a shadow run at site s can be offered:
// one per lookup that can be offered, unless one of them fans out (then
// any number). A lookup can be offered when the agent reached it and one
// of its bindings has the flow's minimum support (flow.Session offers no
// other: issue 24, item 3), in some fold; a binding that can never be
// offered does not lower the floor, so two sites whose offerable lookups
// are the same get the same floor. A shadow run makes no lookup, so none
// chains another site's.
func offers(s *flow.Site, minSupport int) int {
	n := 0
	for _, l := range s.Lookups {
		if l.Reach.For(-1) == 0 {
			continue
		}
		offerable := false
		for i := range l.Bindings {
			b := &l.Bindings[i]
			if b.Support(-1) < minSupport {
				continue
			}
			if b.FanOut() {
				return math.MaxInt
			}
			offerable = true
		}
		if offerable {
			n++
		}
	}
	return n
}

// Bound returns the lower confidence bound of the mean of a site's
// per-session values xs, in the order the sessions came: the normal bound
// for one look, or with anytime the confidence sequence's, which needs the
// values' floor.
func Bound(xs []float64, floor float64, level float64, anytime bool) float64 {
	if anytime {
		return stats.BettingLower(xs, floor, 1-level)
	}
	return stats.MeanLower(xs, level)
}

// judge decides one site.
func judge(s *flow.Site, t *tally, changed map[string]string, floor float64, opt Options) Site {
	out := Site{Tool: s.Tool, Failed: s.Failed, Runs: t.runs, Sessions: len(t.xs), Lookups: t.lookups, Hits: t.hits, Explored: t.explored,
		ServedRuns: t.servedRuns, Served: t.served, HitsBounds: t.earned, SavedBounds: t.saved,
		HitRate: Num(math.NaN()), BreakEven: Num(math.NaN()), Value: Num(math.NaN()), Bound: Num(math.NaN()), Floor: Num(math.NaN())}
	if opt.Anytime {
		out.Floor = Num(floor)
	}
	var why []string
	for _, l := range s.Lookups {
		if c, ok := changed[l.Tool]; ok {
			why = append(why, c)
		}
	}
	cbar := 1.0
	if t.wHits > 0 {
		cbar = t.wCredit / t.wHits
	}
	out.BreakEven = Num(opt.Threshold / (cbar + opt.Threshold))
	if t.wLookups > 0 {
		out.HitRate = Num(t.wHits / t.wLookups)
	}
	if len(t.xs) > 0 {
		var sum float64
		for _, x := range t.xs {
			sum += x
		}
		out.Value = Num(sum / float64(len(t.xs)))
		out.Bound = Num(Bound(t.xs, floor, opt.Level, opt.Anytime))
	}
	bound := "lower bound"
	if opt.Anytime {
		bound = "anytime lower bound"
	}
	switch {
	case len(why) > 0:
		out.Reason = "contract changed: " + strings.Join(why, "; ")
	case t.runs < opt.MinRuns:
		out.Reason = fmt.Sprintf("too few runs: %d runs, --min-runs %d", t.runs, opt.MinRuns)
	case t.lookups == 0 && t.explored == 0:
		out.Reason = fmt.Sprintf("would not pay: it looked nothing up in %d runs", t.runs)
	case t.lookups == 0:
		out.Reason = fmt.Sprintf("would not pay: the rule looks nothing up here; the %d lookups of its %d runs were explored", t.explored, t.runs)
	case math.IsNaN(float64(out.Bound)) && opt.Anytime:
		out.Reason = fmt.Sprintf("no anytime bound: a session's value is below the floor %.3f that this flow's site and the logged budget and ε allow", floor)
	case math.IsNaN(float64(out.Bound)):
		out.Reason = fmt.Sprintf("too few sessions: %d session ran the site, a bound needs 2", len(t.xs))
	case out.Bound <= 0:
		out.Reason = fmt.Sprintf("would not pay: %.3f saved turns per run, %.0f%% %s %.3f (hit rate %.2f, break-even %.2f, over %d lookups in %d sessions)",
			float64(out.Value), 100*opt.Level, bound, float64(out.Bound), float64(out.HitRate), float64(out.BreakEven), t.lookups, len(t.xs))
	default:
		out.Promoted = true
	}
	return out
}
