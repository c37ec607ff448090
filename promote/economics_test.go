package promote

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/flow"
)

// agentCall is one call of a crafted session: tool, its argument, its
// result, and the agent's LLM turn it belongs to.
type agentCall struct {
	tool, arg, result string
	turn              int
}

// shadowSession crafts a session of the agent's calls with the shadow runs
// a proxy serving f in shadow under rule would have logged after each.
func shadowSession(t testing.TB, f *flow.Flow, id string, rule flow.Rule, rng *rand.Rand, calls ...agentCall) evaluate.Session {
	t.Helper()
	ep := &episode.Episode{ID: id, Servers: []episode.Server{{Name: "shop"}}}
	for name, tl := range f.Tools {
		ep.Tools = append(ep.Tools, episode.Tool{Name: name, Server: "shop", Kind: tl.Kind})
	}
	s, err := flow.NewSession(f, flow.Options{Rule: rule, Shadow: true, Rand: rng})
	if err != nil {
		t.Fatal(err)
	}
	var runs []evaluate.Run
	for _, ac := range calls {
		idx := len(ep.Calls())
		c := &episode.Call{Index: idx, Server: "shop", Tool: ac.tool, Args: json.RawMessage(`{"x":"` + ac.arg + `"}`), By: episode.Agent, Turn: ac.turn}
		r := &episode.Result{CallIndex: idx, Text: ac.result}
		c.Result = r
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, Call: c}, episode.Event{Type: episode.EventResult, Result: r})
		for len(ep.Turns) <= ac.turn {
			ep.Turns = append(ep.Turns, episode.Turn{Index: len(ep.Turns)})
		}
		ep.Turns[ac.turn].Calls = append(ep.Turns[ac.turn].Calls, idx)
		si := s.Call(ac.tool, c.Args)
		s.Result(si, ac.result, false)
		run := s.Run(si)
		var ds []flow.Decision
		for {
			d := run.Next()
			ds = append(ds, d)
			if d.Taken < 0 {
				break
			}
		}
		runs = append(runs, asRun(run.End(), ds))
	}
	return evaluate.Session{Episode: ep, Runs: runs}
}

// pays is a flow whose one acting site, find, looks up get with score s.
func pays(t testing.TB, s float64) *flow.Flow {
	f := testFlow(t)
	n := int(100 * s)
	f.Sites[0].Count = flow.Count{N: 100}
	f.Sites[0].Lookups[0].Reach, f.Sites[0].Lookups[0].Habit = flow.Count{N: n}, flow.Count{N: n}
	f.Sites[0].Lookups[0].Bindings[0].Matched = flow.Count{N: n}
	f.Sites[1].Lookups = []flow.Lookup{}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPromoteBreakEven: promote decides by evaluate's reward (issue 18,
// point 3). A hit earns 1/k of a turn and a detour costs the threshold t,
// so a lookup whose matching call is alone in its turn pays above a hit
// rate of t/(1 + t) = 0.23, and one that shares its turn with another call
// only above t/(0.5 + t) = 0.375. A hit rate of 0.28 alone pays; 0.33
// sharing its turn does not; and hoist evaluate agrees on both.
func TestPromoteBreakEven(t *testing.T) {
	f := pays(t, 0.9)
	rule := flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}
	build := func(rate int, shared bool) mem {
		var m mem
		for i := range 3000 {
			calls := []agentCall{{"find", "e", fmt.Sprintf("u%d", i), 0}}
			if i%100 < rate {
				calls = append(calls, agentCall{"get", fmt.Sprintf("u%d", i), "details", 1})
				if shared {
					calls = append(calls, agentCall{"item", "other", "item", 1})
				}
			}
			calls = append(calls, agentCall{"zap", "u", "ok", 2})
			m = append(m, shadowSession(t, f, fmt.Sprint(i), rule, nil, calls...))
		}
		return m
	}
	// hoist evaluate, asked for the value of the rule the runs were logged
	// under against never, agrees: the flow's one acting site pays exactly
	// when serving the rule is worth more than 0 turns a session.
	agree := func(m mem, promoted bool) {
		t.Helper()
		rep, err := evaluate.Evaluate(context.Background(), m, evaluate.Options{
			Targets: []evaluate.Target{evaluate.NewTarget(rule)}, Reward: evaluate.Reward{DetourCost: flow.DefaultThreshold}, Reps: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rep.Results[0].Estimates {
			if pays := e.Lo > 0; pays != promoted || !promoted && !(e.Hi < 0) {
				t.Errorf("promoted %v, but evaluate's %s is %.4f [%.4f, %.4f]", promoted, e.Estimator, float64(e.Value), float64(e.Lo), float64(e.Hi))
			}
		}
	}
	m := build(28, false)
	_, rep, err := Promote(context.Background(), m, f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Sites[0]; !s.Promoted || math.Abs(float64(s.BreakEven)-0.3/1.3) > 1e-12 {
		t.Errorf("hit rate 0.28, k = 1: %+v", s)
	}
	agree(m, true)
	m = build(33, true)
	_, rep, _ = Promote(context.Background(), m, f, Options{})
	if s := rep.Sites[0]; s.Promoted || !strings.HasPrefix(s.Reason, "would not pay") || math.Abs(float64(s.BreakEven)-0.3/0.8) > 1e-12 {
		t.Errorf("hit rate 0.33, k = 2: %+v", s)
	}
	agree(m, false)
}

// TestPromoteExploredLookups: lookups a shadow run took only because it
// explored are not lookups the rule makes: logged under threshold 0.75
// with ε = 0.3, the site's one lookup (score 0.5) is never the rule's
// choice, so however often the agent made it, the site does not pay
// (issue 18, point 3: a site was promoted on hits that were all explored).
func TestPromoteExploredLookups(t *testing.T) {
	f := pays(t, 0.5)
	rule := flow.Rule{Decider: flow.Reach, Threshold: 0.75, Epsilon: 0.3}
	rng := rand.New(rand.NewPCG(1, 2))
	var m mem
	for i := range 200 {
		m = append(m, shadowSession(t, f, fmt.Sprint(i), rule, rng,
			agentCall{"find", "e", fmt.Sprintf("u%d", i), 0}, agentCall{"get", fmt.Sprintf("u%d", i), "details", 1}))
	}
	_, rep, err := Promote(context.Background(), m, f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Sites[0]; s.Promoted || s.Lookups != 0 || s.Explored == 0 || !strings.HasPrefix(s.Reason, "would not pay: the rule looks nothing up here") {
		t.Errorf("explored lookups only: %+v", s)
	}
}
