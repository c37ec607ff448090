package evaluate

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// crafted builds an episode of one server "shop" from calls (tool, args,
// turn), each answered right after it is made.
func crafted(calls ...[3]string) *episode.Episode {
	e := &episode.Episode{ID: "s1", Servers: []episode.Server{{Name: "shop"}},
		Tools: []episode.Tool{{Name: "find", Kind: episode.Read}, {Name: "get", Kind: episode.Read}, {Name: "cancel", Kind: episode.Write}}}
	for i, c := range calls {
		turn := int(c[2][0] - '0')
		call := &episode.Call{Index: i, Server: "shop", Tool: c[0], Args: json.RawMessage(c[1]), By: episode.Agent, Turn: turn}
		if c[0] == "proxy:get" {
			call.Tool, call.By = "get", episode.Proxy
		}
		for len(e.Turns) <= turn {
			e.Turns = append(e.Turns, episode.Turn{Index: len(e.Turns)})
		}
		if call.By == episode.Agent {
			e.Turns[turn].Calls = append(e.Turns[turn].Calls, i)
		}
		e.Events = append(e.Events, episode.Event{Type: episode.EventCall, Call: call},
			episode.Event{Type: episode.EventResult, Result: &episode.Result{CallIndex: i}})
	}
	return e
}

func offer(tool, args string) flow.Offer {
	return flow.Offer{Tool: tool, Args: json.RawMessage(args), PReach: 1, PHabit: 1, PBinding: 1}
}

// decide is a decision taking offers[taken] (-1: stop) under reach≥0.3
// with ε = 0.5, its propensity as the rule gives it.
func decide(taken int, offers ...flow.Offer) flow.Decision {
	rule := flow.Rule{Decider: flow.Reach, Threshold: 0.3, Epsilon: 0.5}
	g, p := flow.Propensities(rule, offers)
	t := taken
	if t < 0 {
		t = len(offers)
	}
	return flow.Decision{Type: "decision", Offers: offers, Greedy: g, Taken: taken, Propensity: p[t], Rule: rule, Shadow: true}
}

func TestReward(t *testing.T) {
	e := crafted(
		[3]string{"find", `{"email":"a@x"}`, "0"},
		[3]string{"proxy:get", `{"id":"u1"}`, "0"},     // the proxy's own lookup: never a match
		[3]string{"get", `{ "id" : "u1" }`, "1"},       // same value, other spelling: a hit, turn of 2
		[3]string{"get", `{"id":"o1","x":[1,2]}`, "1"}, // a hit too
		[3]string{"cancel", `{"id":"o1"}`, "2"},        // a write ends the window
		[3]string{"get", `{"id":"o2"}`, "3"},           // after the write: too late
	)
	runs := []Run{
		{Server: 0, Call: "find", Decisions: []flow.Decision{
			decide(0, offer("get", `{"id":"u1"}`), offer("get", `{"x":[1,2],"id":"o1"}`), offer("get", `{"id":"o2"}`)),
			decide(0, offer("get", `{"x":[1,2],"id":"o1"}`), offer("get", `{"id":"o2"}`)),
			decide(0, offer("get", `{"id":"o2"}`)),
			decide(-1),
		}},
		{Server: 0, Call: "get", Decisions: []flow.Decision{decide(0, offer("get", `{"id":"o2"}`)), decide(-1)}}, // site: call 2
		{Server: 0, Call: "nosuch", Decisions: []flow.Decision{decide(-1)}},                                      // no site call
	}
	pr := prepare([]Session{{Episode: e, Runs: runs[:2]}}, Reward{DetourCost: 0.4})
	if pr.runs != 2 || pr.decisions != 6 || pr.unusable != 0 || pr.mismatch != 0 {
		t.Fatalf("prepared %d runs, %d decisions, %d unusable, %d mismatched", pr.runs, pr.decisions, pr.unusable, pr.mismatch)
	}
	got := []float64{}
	for _, r := range pr.units[0].runs {
		for _, st := range r.steps {
			got = append(got, st.r)
		}
	}
	want := []float64{0.5, 0.5, -0.4, 0, -0.4, 0}
	if len(got) != len(want) {
		t.Fatalf("rewards %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("rewards %v, want %v", got, want)
			break
		}
	}
	if pr.lookups != 4 || pr.hits != 2 {
		t.Errorf("%d lookups, %g hits; want 4 and 2", pr.lookups, pr.hits)
	}

	// A run that cannot be placed after a call of its session leaves the
	// whole session out: its other runs' weights would lack its decisions.
	if pr := prepare([]Session{{Episode: e, Runs: runs}}, Reward{DetourCost: 0.4}); pr.unusable != 7 || len(pr.units) != 0 {
		t.Errorf("with an unplaced run: %d unusable decisions, %d sessions kept", pr.unusable, len(pr.units))
	}

	rep, err := Evaluate(context.Background(), Sessions{{Episode: e, Runs: runs[:2]}}, Options{
		Targets: []Target{Never, NewTarget(flow.Rule{Decider: flow.Reach, Threshold: 0.3, Epsilon: 0.5})},
		Reward:  Reward{DetourCost: 0.4}, Clip: math.Inf(1), Reps: 200})
	if err != nil {
		t.Fatal(err)
	}
	// The logging rule itself: every weight 1, IPS = the session's reward,
	// (0.5 + 0.5 − 0.4 + 0) + (−0.4 + 0).
	self := rep.Results[1]
	if v := float64(self.Estimates[0].Value); math.Abs(v-0.2) > 1e-12 || float64(rep.Logged.Value) != v || self.N != 1 || float64(self.ESS) != 1 {
		t.Errorf("logging rule: IPS %v, as logged %v, n %d, ESS %v", v, float64(rep.Logged.Value), self.N, float64(self.ESS))
	}
	if never := rep.Results[0]; float64(never.Estimates[0].Value) != 0 || never.Unevaluable != never.NoSupport {
		t.Errorf("never: %+v", never)
	}
}

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		in, name string
		ok       bool
	}{
		{"never", "never", true},
		{"greedy", "reach≥0", true},
		{"reach:0.3", "reach≥0.3", true},
		{"habit:0.5:0.1", "habit≥0.5 ε=0.1", true},
		{"reach", "", false},
		{"reach:2", "", false},
		{"arbiter:0.3", "", false},
		{":0.3", "", false},
		{"habit:0.5:-1", "", false},
	} {
		got, err := ParseTarget(c.in)
		if (err == nil) != c.ok || got.Name != c.name {
			t.Errorf("ParseTarget(%q) = %q, %v", c.in, got.Name, err)
		}
	}
}

func TestWithLogged(t *testing.T) {
	logged := map[flow.Rule]int{
		{Decider: flow.Reach, Threshold: 0.3, Epsilon: 0.3}: 5, // in the grid once ε is dropped
		{Decider: flow.Habit, Threshold: 0.4, Epsilon: 0.2}: 2,
	}
	got := withLogged(DefaultTargets(), logged)
	if n := len(DefaultTargets()); len(got) != n+1 || got[n].Name != "habit≥0.4" {
		t.Errorf("targets: %d, last %q; want the grid and habit≥0.4", len(got), got[len(got)-1].Name)
	}
}
