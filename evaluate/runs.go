package evaluate

import "github.com/hoist-mcp/hoist/flow"

// Scored is one session's logged decisions, each run placed after the
// agent's call it followed and each decision scored with Evaluate's reward:
// what hoist promote reads, run by run (issue 18, point 3: promotion by the
// same economics as evaluation).
type Scored struct {
	u unit
}

// Score places the runs of s and scores their decisions with rw, as
// Evaluate does. It returns false when a run of s cannot be placed after a
// call of the session, or has a propensity outside (0, 1]: Evaluate leaves
// such a session out whole.
func Score(s Session, rw Reward) (Scored, bool) {
	u, ok := score(s, rw, &tally{rules: map[flow.Rule]int{}})
	return Scored{u: u}, ok
}

// RunValue is what one run earned under a rule, with W₁:ₜ the product of
// the run's own probability ratios π_e/p up to its decision t:
//
//	Value = Σₜ W₁:ₜ rₜ
//
// For a shadow run this is unbiased for the run's value under the rule
// given the run's offers; runs of one session are not independent, so
// promote treats a session's runs as one observation.
type RunValue struct {
	// Tool and Failed are the run's site: the call it followed, and
	// whether that call's result was an error.
	Tool   string
	Failed bool
	// Shadow says every decision of the run was made in shadow.
	Shadow bool
	// MaxLookups is the run line's: the lookups the run could take. Rule
	// is the rule its first decision was logged under.
	MaxLookups int
	Rule       flow.Rule
	Value      float64
	// Lookups counts the lookups taken that the rule would take too
	// (weight above 0), Hits the hits among them; Explored counts those
	// it would not have taken (weight 0).
	Lookups, Hits, Explored int
	// WLookups, WHits and WCredit are Σ W₁:ₜ over the lookups taken, over
	// the hits, and Σ W₁:ₜ·(1/k) over the hits: the weighted hit rate is
	// WHits/WLookups and the mean credit of a hit WCredit/WHits.
	WLookups, WHits, WCredit float64
	// NoSupport counts decisions where the rule gives weight to an action
	// the logging rule could not take.
	NoSupport int
	// Served counts the run's lookups whose reward is what they earned in
	// a served session (package earned). Earned and SavedTurns sum, over
	// every lookup the run took (explored ones too, unweighted), its hits
	// and the turns they saved, each with its bounds: for a served lookup
	// earned's, as hoist audit reports them; for another, its hit (0 or
	// 1) and credit 1/k, bounds equal.
	Served             int
	Earned, SavedTurns Bounds
}

// Runs returns what each run of the session earned under t, in the order
// the runs were made.
func (s Scored) Runs(t Target) []RunValue {
	out := make([]RunValue, 0, len(s.u.runs))
	for ri := range s.u.runs {
		r := &s.u.runs[ri]
		rv := RunValue{Tool: r.tool, Failed: r.failed, Shadow: r.shadow, MaxLookups: r.maxLookups}
		if len(r.steps) > 0 {
			rv.Rule = r.steps[0].logged
		}
		W := 1.0
		for si := range r.steps {
			st := &r.steps[si]
			pe := t.probs(st.offers, st.logged)
			for a, x := range pe {
				if x > 0 && st.pb[a] == 0 {
					rv.NoSupport++
					break
				}
			}
			W *= pe[st.taken] / st.p
			if st.taken == len(st.offers) {
				continue
			}
			if st.served {
				rv.Served++
			}
			rv.Earned.Add(st.hitB)
			rv.SavedTurns.Add(st.savedB)
			if W == 0 {
				rv.Explored++
				continue
			}
			rv.Lookups++
			rv.WLookups += W
			rv.Value += W * st.r
			rv.WHits += W * st.h
			rv.WCredit += W * st.credit
			if st.h >= 0.5 {
				rv.Hits++
			}
		}
		out = append(out, rv)
	}
	return out
}
