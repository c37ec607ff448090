package learn

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Learned with Options.Rest, the flow says so (learned.rest), and the
// arbiter's fit counts the held-out offers of the rest of the orders'
// fan-out at the agent's first read: in every episode the agent reads one
// order of three after get_user, one at a time, and in every other one the
// two others after it; at its first read the rest offers the two it has not
// read (60 offers over 30 episodes, 30 of them hits), at its later reads
// nothing more.
func TestLearnRestHeldOut(t *testing.T) {
	var eps sliceSource
	for n := 1; n <= 30; n++ {
		var ids []string
		for c := range 3 {
			ids = append(ids, fmt.Sprintf("#W%07d", (n*7919+c*104729)%10000000))
		}
		list, _ := json.Marshal(map[string][]string{"orders": ids})
		read := ids[:1]
		if n%2 == 0 {
			read = ids
		}
		calls := []call{{tool: "get_user", args: fmt.Sprintf(`{"user_id":"u%d"}`, n), result: string(list)}}
		for i, id := range read {
			calls = append(calls, call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, id), result: `{}`, turn: 1 + i})
		}
		calls = append(calls, call{tool: "cancel", args: fmt.Sprintf(`{"order_id":%q}`, read[0]), result: `ok`, turn: 9})
		eps = append(eps, crafted(fmt.Sprint(n), fmt.Sprint(n), calls...))
	}
	for _, rest := range []bool{false, true} {
		f, err := FromSource(context.Background(), eps, episode.Filter{}, Options{Folds: 3, MinSupport: 2, Rest: rest})
		if err != nil {
			t.Fatal(err)
		}
		if f.Learned.Rest != rest {
			t.Errorf("rest %v: learned.rest %v", rest, f.Learned.Rest)
		}
		if err := FitArbiter(context.Background(), eps, episode.Filter{}, f); err != nil {
			t.Fatal(err)
		}
		var h *flow.HeldOut
		for i, o := range f.Arbiter.HeldOut {
			if o.Site == "get_order" && o.Lookup == "get_order" && !o.Narrowed &&
				flow.BindingString(lookup(t, f, "get_order", "get_order").Bindings[o.Binding].Args) == "order_id=$last[get_user].orders[*]" {
				h = &f.Arbiter.HeldOut[i]
			}
		}
		switch {
		case !rest && h != nil && h.Offers.N > 0:
			t.Errorf("without rest: the rest's held-out offers counted: %+v", h)
		case rest && (h == nil || h.Offers.N != 60 || h.Hits.N != 30):
			t.Errorf("with rest: the rest's held-out counts %+v, want 30 hits of 60 offers", h)
		}
	}
}
