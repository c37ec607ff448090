package promote

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/flow"
)

// TestAnytime runs promote after every session on a site that does not
// pay, as a user checking as runs arrive would (issue 18, point 4): the
// agent makes the looked-up call in one session in five, and a detour
// costs 0.25, so a lookup is worth 0.2·1 − 0.8·0.25 = 0 exactly. Over many
// such sequences, the fixed-n bound, looked at after every session, clears
// zero at some point far more often than α = 0.05; --anytime's confidence
// sequence does in at most α of them.
func TestAnytime(t *testing.T) {
	f := pays(t, 0.9)
	rule := flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}
	hit := shadowSession(t, f, "hit", rule, nil, agentCall{"find", "e", "u", 0}, agentCall{"get", "u", "details", 1}, agentCall{"zap", "u", "ok", 2})
	detour := shadowSession(t, f, "detour", rule, nil, agentCall{"find", "e", "u", 0}, agentCall{"zap", "u", "ok", 1})
	const detourCost, level, minRuns = 0.25, 0.95, 10
	opt := Options{Threshold: detourCost, Level: level, MinRuns: minRuns}
	value := func(s evaluate.Session) float64 {
		_, rep, err := Promote(context.Background(), evaluate.Sessions{s}, f, opt)
		if err != nil {
			t.Fatal(err)
		}
		return float64(rep.Sites[0].Value)
	}
	if h, d := value(hit), value(detour); h != 1 || d != -detourCost {
		t.Fatalf("a session's value: %v with the hit, %v with the detour", h, d)
	}
	// The floor the confidence sequence is given: the site looks up one
	// tool, without fanning out, and the runs did not explore, so a
	// session is worth at least one detour.
	_, rep, _ := Promote(context.Background(), evaluate.Sessions{hit}, f, Options{Threshold: detourCost, Anytime: true})
	floor := float64(rep.Sites[0].Floor)
	if floor != -detourCost || floor != Floor(detourCost, 1, 0) {
		t.Fatalf("floor %v", floor)
	}

	// promote after every session, for the first sequences through
	// Promote itself, and for every sequence through the bound it decides
	// by.
	const sequences, length = 300, 80
	rng := rand.New(rand.NewPCG(18, 4))
	var fixedN, anytime int
	for sq := range sequences {
		var data evaluate.Sessions
		var xs []float64
		var everFixed, everAnytime bool
		for n := 1; n <= length; n++ {
			s, x := detour, -detourCost
			if rng.Float64() < 0.2 {
				s, x = hit, 1
			}
			ep := *s.Episode
			ep.ID = fmt.Sprintf("%d-%d", sq, n)
			data = append(data, evaluate.Session{Episode: &ep, Runs: s.Runs})
			xs = append(xs, x)
			if n < minRuns {
				continue
			}
			fixed := Bound(xs, floor, level, false) > 0
			any := Bound(xs, floor, level, true) > 0
			if sq < 3 && n%10 == 0 {
				for _, a := range []bool{false, true} {
					o := opt
					o.Anytime = a
					_, rep, err := Promote(context.Background(), data, f, o)
					if err != nil {
						t.Fatal(err)
					}
					if want := map[bool]bool{false: fixed, true: any}[a]; rep.Sites[0].Promoted != want {
						t.Fatalf("sequence %d after %d sessions, anytime %v: Promote says %v, its bound %v", sq, n, a, rep.Sites[0].Promoted, want)
					}
				}
			}
			everFixed = everFixed || fixed
			everAnytime = everAnytime || any
		}
		if everFixed {
			fixedN++
		}
		if everAnytime {
			anytime++
		}
	}
	alpha := 1 - level
	t.Logf("promoted at some point of %d sessions: fixed-n bound %d, anytime %d of %d sequences", length, fixedN, anytime, sequences)
	if rate := float64(anytime) / sequences; rate > alpha {
		t.Errorf("--anytime promoted a site that does not pay in %.3f of the sequences, want at most %v", rate, alpha)
	}
	if rate := float64(fixedN) / sequences; rate <= 2*alpha {
		t.Errorf("the fixed-n bound promoted it in only %.3f of the sequences: the test does not show what --anytime is for", rate)
	}

	// And it is not vacuous: a site where the agent makes the lookup in
	// half the sessions (0.375 turns a session) is promoted within as many
	// sessions in most sequences.
	found := 0
	for range 100 {
		var xs []float64
		for range length {
			x := -detourCost
			if rng.Float64() < 0.5 {
				x = 1
			}
			xs = append(xs, x)
		}
		if Bound(xs, floor, level, true) > 0 {
			found++
		}
	}
	if found < 80 {
		t.Errorf("--anytime promoted a site worth 0.375 turns a session in %d of 100 sequences of %d sessions", found, length)
	}
}
