package learn

import (
	"context"
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
