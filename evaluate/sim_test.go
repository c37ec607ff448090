package evaluate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hoist-mcp/hoist/flow"
)

// world is a simulated flow: each run offers 1 to 4 lookups with scores
// P(tool) in [0.02, 1] (P(binding) 1); a lookup is a hit with probability
// h(s) = 0.15 + 0.7·s², which the flow's score only approximates (the model
// is misspecified on purpose); a run takes at most maxLookups lookups, and
// after each taken the rest stay offered, as in shadow mode.
type world struct {
	cost       float64
	maxLookups int
	tools      []string
}

func (w world) context(rng *rand.Rand) ([]flow.Offer, []float64) {
	k := 1 + rng.IntN(4)
	offers := make([]flow.Offer, k)
	h := make([]float64, k)
	for i := range offers {
		s := 0.02 + 0.98*rng.Float64()
		offers[i] = flow.Offer{Tool: w.tools[rng.IntN(len(w.tools))], Args: json.RawMessage(`{}`),
			PReach: s, PHabit: s * rng.Float64(), PBinding: 1}
		h[i] = 0.15 + 0.7*s*s
	}
	return offers, h
}

// trueValue is a run's expected reward under a deterministic rule t in one
// context: follow t's choices, adding each lookup's expected reward.
func (w world) trueValue(t Target, offers []flow.Offer, h []float64) float64 {
	left := append([]flow.Offer(nil), offers...)
	hl := append([]float64(nil), h...)
	v := 0.0
	for taken := 0; taken < w.maxLookups && len(left) > 0; taken++ {
		p := t.probs(left)
		a := -1
		for i, x := range p[:len(left)] {
			if x == 1 {
				a = i
			}
		}
		if a < 0 {
			break
		}
		v += hl[a] - (1-hl[a])*w.cost
		left = append(left[:a], left[a+1:]...)
		hl = append(hl[:a], hl[a+1:]...)
	}
	return v
}

// logRun draws one run under the logging rule, as flow.Run.Next does.
func (w world) logRun(rule flow.Rule, rng *rand.Rand) run {
	offers, h := w.context(rng)
	var r run
	left := append([]flow.Offer(nil), offers...)
	hl := append([]float64(nil), h...)
	for taken := 0; ; taken++ {
		cur := left
		if taken >= w.maxLookups {
			cur = []flow.Offer{}
		}
		_, p := flow.Propensities(rule, cur)
		a := drawIndex(p, rng.Float64())
		st := step{offers: append([]flow.Offer(nil), cur...), logged: rule, taken: a, p: p[a], pb: p}
		if a < len(cur) {
			st.hit = rng.Float64() < hl[a]
			if st.hit {
				st.credit, st.r = 1, 1
			} else {
				st.r = -w.cost
			}
		}
		r.steps = append(r.steps, st)
		if a == len(cur) {
			return r
		}
		left = append(left[:a:a], left[a+1:]...)
		hl = append(hl[:a:a], hl[a+1:]...)
	}
}

func drawIndex(p []float64, u float64) int {
	acc := 0.0
	last := len(p) - 1
	for i, x := range p {
		if x <= 0 {
			continue
		}
		acc += x
		last = i
		if u < acc {
			return i
		}
	}
	return last
}

func (w world) dataset(rule flow.Rule, sessions, runs int, rng *rand.Rand) *prepared {
	pr := &prepared{rules: map[flow.Rule]int{}}
	for s := range sessions {
		u := unit{fold: s % 2}
		for range runs {
			r := w.logRun(rule, rng)
			pr.runs++
			pr.decisions += len(r.steps)
			u.runs = append(u.runs, r)
		}
		pr.units = append(pr.units, u)
		pr.sessions++
	}
	return pr
}

// TestCoverage checks, on 200 simulated datasets with a known true value,
// that the 95% intervals of IPS, SNIPS and DR cover it at about the
// nominal rate (issue 6, point 4).
func TestCoverage(t *testing.T) {
	w := world{cost: 0.3, maxLookups: 3, tools: []string{"a", "b", "c"}}
	logging := flow.Rule{Decider: flow.Reach, Threshold: 0.3, Epsilon: 0.3}
	targets := []Target{
		NewTarget(flow.Rule{Decider: flow.Reach, Threshold: 0.1}),
		NewTarget(flow.Rule{Decider: flow.Reach, Threshold: 0}),
	}
	rng := rand.New(rand.NewPCG(7, 11))
	truth := make([]float64, len(targets))
	const contexts = 200000
	for range contexts {
		offers, h := w.context(rng)
		for i, tg := range targets {
			truth[i] += w.trueValue(tg, offers, h)
		}
	}
	for i := range truth {
		truth[i] /= contexts
	}
	datasets := 200
	if testing.Short() {
		datasets = 60
	}
	covered := make([][nMetrics]int, len(targets))
	for d := range datasets {
		pr := w.dataset(logging, 150, 5, rng)
		fitModel(pr, Reward{DetourCost: w.cost})
		rep := estimate(pr, Options{Targets: targets, Clip: math.Inf(1), Level: 0.95, Reps: 500, Seed: uint64(d)})
		for ti, res := range rep.Results {
			if res.NoSupport != 0 {
				t.Fatalf("%s: %d decisions without support", res.Rule, res.NoSupport)
			}
			for m, e := range res.Estimates {
				if float64(e.Lo) <= truth[ti] && truth[ti] <= float64(e.Hi) {
					covered[ti][m]++
				}
			}
		}
	}
	for ti, tg := range targets {
		for _, m := range []int{0, 2, 3} {
			rate := float64(covered[ti][m]) / float64(datasets)
			t.Logf("%s %s: true %.4f, coverage %.3f", tg.Name, estimatorNames[m], truth[ti], rate)
			if rate < 0.88 || rate > 0.99 {
				t.Errorf("%s %s: coverage %.3f of the true value %.4f, want 0.88 to 0.99", tg.Name, estimatorNames[m], rate, truth[ti])
			}
		}
	}
}
