package learn

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// The arbiter, fitted on held-out replays: the user, which the agent
// always reads after finding them, gets a high P(hit); each of a fan-out
// over three orders, of which the agent reads one, a low one; and the
// probabilities are calibrated out of fold.
func TestFitArbiter(t *testing.T) {
	var eps sliceSource
	for n := 1; n <= 40; n++ {
		u := fmt.Sprintf("user_%d", n)
		eps = append(eps, crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "find_user", args: fmt.Sprintf(`{"email":"c%d@example.com"}`, n), result: u},
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: fmt.Sprintf(`{"orders":["%da","%db","%dc"]}`, n, n, n), turn: 1},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":"%d%c"}`, n, "abc"[n%3]), result: `{}`, turn: 2},
			call{tool: "cancel", args: fmt.Sprintf(`{"order_id":"%d%c"}`, n, "abc"[n%3]), result: `ok`, turn: 3},
		))
	}
	f, err := FromSource(context.Background(), eps, episode.Filter{}, Options{Folds: 4, MinSupport: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := FitArbiter(context.Background(), eps, episode.Filter{}, f); err != nil {
		t.Fatal(err)
	}
	a := f.Arbiter
	if a == nil || len(a.Folds) != 4 || a.Fit.Offers == 0 || a.Fit.Hits == 0 || a.Fit.Hits == a.Fit.Offers {
		t.Fatalf("arbiter %+v", a)
	}
	if a.Fit.ECE > 0.1 {
		t.Errorf("out-of-fold ECE %v, want it small", a.Fit.ECE)
	}
	user := a.P(flow.ArbiterInputs{PReach: 1, PHabit: 1, PBinding: 1, Oracle: math.NaN()}, -1)
	order := a.P(flow.ArbiterInputs{PReach: 1, PHabit: 1, PBinding: 1.0 / 3, FanOut: true, Oracle: math.NaN()}, -1)
	if !(user > 0.8 && order < 0.5) {
		t.Errorf("P(user) %v, P(one order of a fan-out) %v: want high and low", user, order)
	}
	// The flow file keeps the arbiter, and serves it by default.
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := flow.Parse(b, "arbiter.flow.json")
	if err != nil {
		t.Fatal(err)
	}
	if g.DefaultDecider() != flow.ArbiterDecider || g.Arbiter.Fit != a.Fit {
		t.Errorf("read back: decider %s, fit %+v", g.DefaultDecider(), g.Arbiter.Fit)
	}
	// One fold: nothing held out to fit on, no arbiter.
	f1, _ := FromSource(context.Background(), eps, episode.Filter{}, Options{Folds: 1, MinSupport: 2})
	if err := FitArbiter(context.Background(), eps, episode.Filter{}, f1); err != nil || f1.Arbiter != nil {
		t.Errorf("one fold: %v, arbiter %+v", err, f1.Arbiter)
	}
}

// Given an oracle, the fit asks the flow's question about every training
// offer and fits its answer as the "oracle" input. The mock says yes to
// the order the agent named before the customer agreed, and is unsure of
// the others, so its answer tells the fan-out's hit from its detours: the
// weight is positive, and the fit is the same on every run.
func TestFitArbiterWithOracle(t *testing.T) {
	var eps sliceSource
	for n := 1; n <= 40; n++ {
		u := fmt.Sprintf("user_%d", n)
		order := fmt.Sprintf("%d%c", n, "abc"[n%3])
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "find_user", args: fmt.Sprintf(`{"email":"c%d@example.com"}`, n), result: u},
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: fmt.Sprintf(`{"orders":["%da","%db","%dc"]}`, n, n, n), turn: 1},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, order), result: `{}`, turn: 2},
			call{tool: "cancel", args: fmt.Sprintf(`{"order_id":%q}`, order), result: `ok`, turn: 3},
		)
		ep.Events = append([]episode.Event{
			{Type: episode.EventMessage, Message: &episode.Message{Role: "assistant", Text: "So it is order " + order + " you want cancelled?"}},
			{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: "Yes, that one."}},
		}, ep.Events...)
		eps = append(eps, ep)
	}
	fit := func(o flow.Oracle) *flow.Flow {
		t.Helper()
		f, err := FromSource(context.Background(), eps, episode.Filter{}, Options{Folds: 4, MinSupport: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := FitArbiterWith(context.Background(), eps, episode.Filter{}, f, ArbiterOptions{Oracle: o}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := fit(client.NewMock("m"))
	a := f.Arbiter
	if a == nil || a.Features[len(a.Features)-1] != flow.FeatureOracle || !(a.OracleWeight(-1) > 0) {
		t.Fatalf("arbiter %+v: want a positive oracle weight, last", a)
	}
	named := a.P(flow.ArbiterInputs{PReach: 1, PHabit: 1, PBinding: 1.0 / 3, FanOut: true, Oracle: client.MockYes}, -1)
	other := a.P(flow.ArbiterInputs{PReach: 1, PHabit: 1, PBinding: 1.0 / 3, FanOut: true, Oracle: client.MockUnsure}, -1)
	if !(named > other) {
		t.Errorf("P(the order named) %v, P(another) %v: want the named one higher", named, other)
	}
	b1, _ := f.Marshal()
	b2, _ := fit(client.NewMock("m")).Marshal()
	if string(b1) != string(b2) {
		t.Error("two fits with the mock differ")
	}
	if plain := fit(nil); slices.Contains(plain.Arbiter.Features, flow.FeatureOracle) {
		t.Errorf("without an oracle: features %v", plain.Arbiter.Features)
	}
}

// The arbiter's fit counts each lookup's held-out offers and hits by the
// agent's model (issue 26, lever 2): "careful" reads every order of a
// user, "hasty" one of six, so the fan-out over the orders hits for one
// and not the other; served, each agent gets what its own rate earns.
func TestFitArbiterHeldOutByAgent(t *testing.T) {
	var eps sliceSource
	for n := 1; n <= 40; n++ {
		u := fmt.Sprintf("user_%d", n)
		var ids []string
		for c := range 6 {
			ids = append(ids, fmt.Sprintf("#W%07d", (n*7919+c*104729)%10000000))
		}
		list, _ := json.Marshal(map[string][]string{"orders": ids})
		calls := []call{
			{tool: "find_user", args: fmt.Sprintf(`{"email":"c%d@example.com"}`, n), result: u},
			{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: string(list), turn: 1},
		}
		model, read := "careful", ids
		if n%2 == 0 {
			model, read = "hasty", ids[n%6:n%6+1]
		}
		for _, id := range read {
			calls = append(calls, call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, id), result: `{}`, turn: 2})
		}
		calls = append(calls, call{tool: "cancel", args: fmt.Sprintf(`{"order_id":%q}`, read[0]), result: `ok`, turn: 3})
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n), calls...)
		ep.AgentModel = model
		eps = append(eps, ep)
	}
	f, err := FromSource(context.Background(), eps, episode.Filter{}, Options{Folds: 4, MinSupport: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := FitArbiterWith(context.Background(), eps, episode.Filter{}, f, ArbiterOptions{ByAgent: true}); err != nil {
		t.Fatal(err)
	}
	var h *flow.HeldOut
	for i, o := range f.Arbiter.HeldOut {
		if o.Site == "get_user" && o.Lookup == "get_order" {
			h = &f.Arbiter.HeldOut[i]
		}
	}
	if h == nil || len(h.Agents) != 2 {
		t.Fatalf("get_order's held-out counts %+v: want them by two agents", h)
	}
	careful, hasty := h.Rate(-1, "careful", 1), h.Rate(-1, "hasty", 1)
	if !(careful > 0.8 && hasty < flow.DefaultThreshold) {
		t.Errorf("held-out rate careful %.3f, hasty %.3f: want high and below the threshold", careful, hasty)
	}
	// Served (the held-out replay, each task in its own fold), the
	// fan-out is looked up for careful's episodes only.
	orders := map[string]int{}
	for _, ep := range eps {
		r := flow.ReplayEpisode(f, ep, flow.ReplayOptions{Rule: flow.Rule{Decider: flow.ArbiterDecider, Threshold: flow.DefaultThreshold}, Caps: flow.DefaultCaps})
		for _, lk := range r.Lookups {
			if lk.From == "get_user" {
				orders[ep.AgentModel]++
			}
		}
	}
	if orders["careful"] == 0 || orders["hasty"] != 0 {
		t.Errorf("orders looked up after get_user, by agent: %v; want careful's only", orders)
	}
	// The flow file keeps them.
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Parse(b, "agents.flow.json"); err != nil {
		t.Fatal(err)
	}
}
