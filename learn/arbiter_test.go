package learn

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
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
