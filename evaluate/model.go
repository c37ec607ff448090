package evaluate

import "math"

// priorWeight is m, the weight in pseudo-lookups of the flow's own score in
// the hit-rate model.
const priorWeight = 2

// fitModel fills q̂ for every action of every step: the direct-method model
// of the reward (docs/ope.md §5), cross-fitted over two folds of sessions
// (each step is predicted from the other fold's lookups; Narita, Yasui &
// Yata 2021). For an offer a of tool T with the flow's score s(a) =
// P(tool) × P(binding) under the logging decider, clamped to [0, 1],
//
//	ĥ(a) = (hits_T + m·s(a)) / (taken_T + m)        m = 2
//	q̂(a) = ĥ(a)·c̄ − (1 − ĥ(a))·DetourCost
//	q̂(stop) = 0
//
// where hits_T and taken_T count the other fold's lookups of T taken and
// hit, and c̄ is the mean credit (1/k) of that fold's hits (1 when none).
// The flow's score is the prior, the logged hits the evidence.
func fitModel(pr *prepared, rw Reward) {
	type count struct{ hits, taken float64 }
	var byTool [2]map[string]*count
	var credit, nhit [2]float64
	for f := range byTool {
		byTool[f] = map[string]*count{}
	}
	for _, u := range pr.units {
		for _, r := range u.runs {
			for _, st := range r.steps {
				if st.taken >= len(st.offers) {
					continue
				}
				t := st.offers[st.taken].Tool
				c := byTool[u.fold][t]
				if c == nil {
					c = &count{}
					byTool[u.fold][t] = c
				}
				c.taken++
				c.hits += st.h
				credit[u.fold] += st.credit
				nhit[u.fold] += st.h
			}
		}
	}
	for ui := range pr.units {
		u := &pr.units[ui]
		other := 1 - u.fold
		cbar := 1.0
		if nhit[other] > 0 {
			cbar = credit[other] / nhit[other]
		}
		for ri := range u.runs {
			for si := range u.runs[ri].steps {
				st := &u.runs[ri].steps[si]
				st.q = make([]float64, len(st.offers)+1)
				for i := range st.offers {
					o := &st.offers[i]
					s := math.Min(1, math.Max(0, o.Score(st.logged.Decider)))
					var h, n float64
					if c := byTool[other][o.Tool]; c != nil {
						h, n = c.hits, c.taken
					}
					hit := (h + priorWeight*s) / (n + priorWeight)
					st.q[i] = hit*cbar - (1-hit)*rw.DetourCost
				}
			}
		}
	}
}
