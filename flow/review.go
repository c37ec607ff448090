package flow

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

// Review is what a flow would do, for a person to check before serving it
// (hoist flow-show): per site, the lookups it would make under a rule,
// ranked, and what it would never do and why.
type Review struct {
	Domain     string       `json:"domain"`
	Rule       Rule         `json:"rule"`
	Fold       int          `json:"fold"`
	Episodes   int          `json:"episodes"`
	Sites      []SiteReview `json:"sites"`
	Never      []ToolReview `json:"never"`
	Lookups    int          `json:"lookups"`   // lookups that act, over all sites
	SitesAct   int          `json:"sites_act"` // sites with at least one
	MinSupport int          `json:"min_support"`
	// Arbiter is the flow's arbiter, when it has one: its inputs, weights
	// and out-of-fold fit.
	Arbiter *Arbiter `json:"arbiter,omitempty"`
}

// SiteReview is one site under review.
type SiteReview struct {
	Tool    string         `json:"tool"`
	Failed  bool           `json:"failed"`
	Support int            `json:"support"`
	Served  bool           `json:"served"`
	Why     string         `json:"why,omitempty"` // why it is not served
	Lookups []LookupReview `json:"lookups"`
}

// LookupReview is one candidate lookup under review. Act says whether the
// flow would make it (P(tool) × P(binding) at or above the threshold, with
// a binding); Why says why not.
type LookupReview struct {
	Tool     string  `json:"tool"`
	Act      bool    `json:"act"`
	Why      string  `json:"why,omitempty"`
	PReach   float64 `json:"p_reach"`
	PHabit   float64 `json:"p_habit"`
	PBinding float64 `json:"p_binding"`
	// PArbiter is the arbiter's P(hit) where the site's result says
	// nothing of the predicate (0 without an arbiter).
	PArbiter float64 `json:"p_arbiter,omitempty"`
	Score    float64 `json:"score"`
	// Threshold is the least score it needs: the rule's, scaled by what a
	// detour of its results costs (MeanBytes beside DetourBytes).
	Threshold float64 `json:"threshold"`
	MeanBytes float64 `json:"mean_bytes,omitempty"`
	// When is the lookup's predicate, with P(reach) where it holds and
	// where it does not.
	When      string  `json:"when,omitempty"`
	PWhenHeld float64 `json:"p_when_held,omitempty"`
	PWhenNot  float64 `json:"p_when_not,omitempty"`
	// Cues are, in a flow learned with cues, the words of which one must
	// have been said before the site for it to be offered (Cue.Lifts in
	// the fold), the agent's named "agent: word" (Cue.Name); none when it
	// is offered whatever was said.
	Cues    []string                `json:"cues,omitempty"`
	Binding map[string]binding.Expr `json:"binding,omitempty"`
	Matched int                     `json:"matched"`
	Of      int                     `json:"of"`                // reach, or a fan-out's calls
	FanOut  bool                    `json:"fan_out,omitempty"` // Matched and Of count calls
	Reach   int                     `json:"reach"`
}

// ToolReview is a tool the flow never looks up, and why.
type ToolReview struct {
	Tool string `json:"tool"`
	Why  string `json:"why"`
}

// Review returns what f would do under rule for a task of fold (-1: the
// totals). Sites come by support, most first; lookups by whether they act,
// then score.
func (f *Flow) Review(rule Rule, fold int) *Review {
	if rule.Decider == "" {
		rule.Decider = f.DefaultDecider()
	}
	r := &Review{Domain: f.Domain, Rule: rule, Fold: fold, Episodes: f.Learned.Episodes, MinSupport: f.MinSupport, Sites: []SiteReview{}, Never: []ToolReview{}, Arbiter: f.Arbiter}
	for _, s := range f.Sites {
		sr := SiteReview{Tool: s.Tool, Failed: s.Failed, Support: s.Count.For(fold), Served: true, Lookups: []LookupReview{}}
		if sr.Support < max(f.MinSupport, 1) {
			sr.Served, sr.Why = false, fmt.Sprintf("low support: seen %d times, needs %d", sr.Support, max(f.MinSupport, 1))
		}
		if s.Promoted != nil && !*s.Promoted {
			sr.Served, sr.Why = false, "not promoted: "+s.Reason
		}
		for _, l := range s.Lookups {
			lr := LookupReview{Tool: l.Tool, Reach: l.Reach.For(fold)}
			if sr.Support > 0 {
				lr.PReach = float64(lr.Reach) / float64(sr.Support)
				lr.PHabit = float64(l.Habit.For(fold)) / float64(sr.Support)
			}
			for bi := range l.Bindings {
				b := &l.Bindings[bi]
				if m := b.Support(fold); m >= f.MinSupport && m > lr.Matched {
					lr.Matched, lr.Binding = m, b.Args
					lr.PBinding = b.PBinding(fold, lr.Reach)
					lr.Of = lr.Reach
					if b.Calls != nil {
						lr.Of, lr.FanOut = b.Calls.For(fold), true
					}
				}
			}
			o := Offer{PReach: lr.PReach, PHabit: lr.PHabit, PBinding: lr.PBinding}
			if lr.Binding != nil {
				o.Binding = map[string]string{}
				for k, e := range lr.Binding {
					o.Binding[k] = e.String()
				}
			}
			if p := l.Predicate; p != nil && sr.Support > 0 {
				lr.When = p.When.String()
				lr.PWhenHeld = p.PWhen(fold, true, lr.Reach, sr.Support)
				lr.PWhenNot = p.PWhen(fold, false, lr.Reach, sr.Support)
			}
			if f.Learned.Cues || f.Learned.AgentWords {
				for ci := range l.Cues {
					if c := &l.Cues[ci]; c.Lifts(fold, lr.Reach, sr.Support) {
						lr.Cues = append(lr.Cues, c.Name())
					}
				}
			}
			if a := f.Arbiter; a != nil {
				o.PArbiter = a.P(InputsOf(&o), fold)
				lr.PArbiter = o.PArbiter
			}
			if lr.MeanBytes = l.MeanBytes(fold); lr.MeanBytes > DetourBytes {
				o.Cost = lr.MeanBytes / DetourBytes
			}
			lr.Score = o.Score(rule.Decider)
			lr.Threshold = o.Threshold(rule.Threshold)
			switch {
			case !sr.Served:
				lr.Why = "site not served"
			case lr.Binding == nil:
				lr.Why = fmt.Sprintf("no binding reproduced the agent's arguments %d times (min support)", max(f.MinSupport, 1))
			case rule.Decider == ArbiterDecider && f.Arbiter == nil:
				lr.Why = "the flow has no arbiter"
			case lr.Score < lr.Threshold:
				lr.Why = fmt.Sprintf("below the threshold: %.2f < %.2f", lr.Score, lr.Threshold)
			default:
				lr.Act = true
				r.Lookups++
			}
			sr.Lookups = append(sr.Lookups, lr)
		}
		slices.SortStableFunc(sr.Lookups, func(a, b LookupReview) int {
			if a.Act != b.Act {
				if a.Act {
					return -1
				}
				return 1
			}
			return cmp.Compare(b.Score, a.Score)
		})
		if len(sr.Lookups) > 0 && sr.Lookups[0].Act {
			r.SitesAct++
		}
		r.Sites = append(r.Sites, sr)
	}
	slices.SortStableFunc(r.Sites, func(a, b SiteReview) int { return cmp.Compare(b.Support, a.Support) })
	names := make([]string, 0, len(f.Tools))
	for name := range f.Tools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch k := f.Tools[name].Kind; k {
		case episode.Write:
			r.Never = append(r.Never, ToolReview{name, "a write tool: a flow only reads"})
		case episode.Generic:
			r.Never = append(r.Never, ToolReview{name, "no readOnlyHint: a flow calls only tools it knows read"})
		}
	}
	return r
}

// BindingString returns a lookup's binding as "arg=expr, …", sorted by
// argument.
func BindingString(args map[string]binding.Expr) string {
	if len(args) == 0 {
		return "(no arguments)"
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + args[k].String()
	}
	return strings.Join(parts, ", ")
}
