package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/flow"
)

// one evaluates a dataset of the single session s under targets, without
// clipping, and returns each target's estimates per session.
func one(t testing.TB, s Session, cost float64, targets ...Target) [][nMetrics]float64 {
	t.Helper()
	rep, err := Evaluate(context.Background(), Sessions{s}, Options{Targets: targets, Reward: Reward{DetourCost: cost}, Clip: math.Inf(1), Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := make([][nMetrics]float64, len(rep.Results))
	for i, r := range rep.Results {
		for m, e := range r.Estimates {
			out[i][m] = float64(e.Value)
		}
	}
	return out
}

// TestRewardAsDocumented: evaluate scores every decision of every session
// the shop's logging rule can produce as the world itself does
// (docs/evaluate.md, "What is estimated"): in particular a hit earns 1/k
// for k of the agent's calls in its turn, whatever lookups the proxy made
// in that turn (issue 18, point 2).
func TestRewardAsDocumented(t *testing.T) {
	w := newShop()
	for _, shadow := range []bool{false, true} {
		logging := flow.Rule{Decider: flow.Reach, Threshold: 0.75, Epsilon: 0.3}
		l := w.law(logging, shadow)
		bad := 0
		for _, pl := range l.sessions {
			got := one(t, pl.session, w.cost, NewTarget(logging))[0][0]
			if math.Abs(got-pl.reward) > 1e-9 {
				if bad++; bad <= 3 {
					t.Errorf("shadow %v, %s: reward %v as evaluate scores it, %v as documented", shadow, pl.session.Episode.ID, got, pl.reward)
				}
			}
		}
		if bad > 3 {
			t.Errorf("shadow %v: %d of %d sessions scored otherwise than documented", shadow, bad, len(l.sessions))
		}
	}
}

// TestExactlyUnbiased computes, exactly, the expectation of IPS and DR
// over every session the logging rule can produce (each a one-session
// dataset, weighted by its probability) and checks it against the true
// value of each target rule, from the world's own sessions under that rule
// (issue 18, point 1): the runs of a session are not independent (asked
// lookups, the session cap, chained and appended lookups), so an
// estimator that weights runs as if they were is biased here.
func TestExactlyUnbiased(t *testing.T) {
	w := newShop()
	targets := []flow.Rule{
		{Decider: flow.Reach, Threshold: 0.75}, // the logging rule, greedy
		{Decider: flow.Reach, Threshold: 0.3},
		{Decider: flow.Reach, Threshold: 0},
	}
	for _, shadow := range []bool{false, true} {
		for _, eps := range []float64{0.1, 0.3} {
			logging := flow.Rule{Decider: flow.Reach, Threshold: 0.75, Epsilon: eps}
			l := w.law(logging, shadow)
			var ts []Target
			for _, r := range targets {
				ts = append(ts, NewTarget(r))
			}
			est := make([][nMetrics]float64, len(ts))
			for i, pl := range l.sessions {
				for ti, e := range one(t, pl.session, w.cost, ts...) {
					for m := range nMetrics {
						est[ti][m] += l.p[i] * e[m]
					}
				}
			}
			for ti, r := range targets {
				truth := w.truth(r, shadow)
				for _, m := range []int{0, 3} {
					if math.Abs(est[ti][m]-truth) > 1e-9 {
						t.Errorf("shadow %v, ε %v, %s: E[%s] = %.6f, true value %.6f", shadow, eps, ts[ti].Name, estimatorNames[m], est[ti][m], truth)
					}
				}
			}
		}
	}
}

// TestOrderFree: the same sessions in another order give the same report,
// to the last digit: the DR model's folds are a hash of the session id, not
// the sessions' places (issue 18, point 4), and the bootstrap resamples
// them in the order of their ids.
func TestOrderFree(t *testing.T) {
	w := newShop()
	l := w.law(flow.Rule{Decider: flow.Reach, Threshold: 0.75, Epsilon: 0.3}, false)
	data := l.draw(120, "s", rand.New(rand.NewPCG(3, 4)))
	opt := Options{Reward: Reward{DetourCost: w.cost}, Reps: 300, Seed: 9}
	a, err := Evaluate(context.Background(), data, opt)
	if err != nil {
		t.Fatal(err)
	}
	shuffled := slices.Clone(data)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b, err := Evaluate(context.Background(), shuffled, opt)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if diff := cmp.Diff(string(ja), string(jb)); diff != "" {
		t.Errorf("the report depends on the sessions' order (-in order +shuffled):\n%s", diff)
	}
}

// TestWorkedExample is docs/evaluate.md's example ("Why the session"):
// logged under reach ≥ 0.75 with ε = 0.3 in shadow, with a cap of two
// lookups a session, reach ≥ 0.3 earns 2 a session, which the expectation
// of IPS over the two sessions the logging rule can produce is; weighting
// each run by its own decisions would give 1.79.
func TestWorkedExample(t *testing.T) {
	w := newShop()
	for i := range w.f.Sites {
		if s := &w.f.Sites[i]; s.Tool == "get_cart" {
			s.Lookups = s.Lookups[:1] // the cart's order only
		}
	}
	w.caps.PerSession = 2
	get := func(tool, arg, v string) call { return call{tool, fmt.Sprintf(`{%q:%q}`, arg, v)} }
	w.tasks = []task{{"the example", 1, checks, `["#a","#b"]`, [][]call{
		{get("find_user", "email", "c@x")}, {get("get_user", "user_id", "U")}, {get("get_order", "order_id", "#a")}, {get("get_cart", "user_id", "U")}}}}
	logging := flow.Rule{Decider: flow.Reach, Threshold: 0.75, Epsilon: 0.3}
	target := flow.Rule{Decider: flow.Reach, Threshold: 0.3}
	l := w.law(logging, true)
	if len(l.sessions) != 2 {
		t.Fatalf("%d sessions, want 2", len(l.sessions))
	}
	if v := w.truth(target, true); math.Abs(v-2) > 1e-12 {
		t.Errorf("true value %v, want 2", v)
	}
	ips := l.expect(func(s Session) float64 { return one(t, s, w.cost, NewTarget(target))[0][0] })
	if math.Abs(ips-2) > 1e-9 {
		t.Errorf("E[IPS] = %v, want 2", ips)
	}
	// Each run weighted by its own decisions only, as in the example's
	// last line.
	perRun := l.expect(func(s Session) float64 {
		sc, _ := Score(s, Reward{DetourCost: w.cost})
		v := 0.0
		for _, r := range sc.Runs(NewTarget(target)) {
			v += r.Value
		}
		return v
	})
	if math.Abs(perRun-1.79) > 1e-9 {
		t.Errorf("weighted run by run: %v, want 1.79", perRun)
	}
}
