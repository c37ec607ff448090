package learn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// A customer who names an order gets that order looked up; one who names
// none gets two of six looked up. Over every order, the fan-out reproduces
// more of the agent's calls (11) than the order the customer named (5),
// but it makes 48 calls for them: 37 detours. The named order makes 5
// calls, every one the agent's. The binding kept first is the one that
// earns more: hits × a turn's value − detours × their cost.
func TestLearnBindingByValue(t *testing.T) {
	orders := func(n int) string {
		var ids []string
		for k := 0; k < 6; k++ {
			ids = append(ids, fmt.Sprintf("%q", fmt.Sprintf("#W%d%d", n, k)))
		}
		return `{"orders":[` + strings.Join(ids, ",") + `]}`
	}
	var eps []*episode.Episode
	for n := 1; n <= 5; n++ {
		named := fmt.Sprintf("#W%d%d", n, 1+n%5)
		eps = append(eps, said(crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":"user_%d"}`, n), result: orders(n)},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, named), result: "{}", turn: 1},
		), fmt.Sprintf("I want to return order %s, thanks", named)))
	}
	for n := 6; n <= 8; n++ {
		eps = append(eps, crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":"user_%d"}`, n), result: orders(n)},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":"#W%d3"}`, n), result: "{}", turn: 1},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":"#W%d4"}`, n), result: "{}", turn: 2},
		))
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2, MaxBindings: 10}, eps...)
	l := lookup(t, f, "get_user", "get_order")
	if l == nil {
		t.Fatal("no get_user → get_order lookup")
	}
	var fan *flow.Bound
	for i := range l.Bindings {
		if flow.BindingString(l.Bindings[i].Args) == "order_id=$result.orders[*]" {
			fan = &l.Bindings[i]
		}
	}
	if fan == nil || fan.Used.N != 11 || fan.Calls.N != 48 {
		t.Fatalf("the fan-out over every order: %+v, want 11 of 48 calls the agent's (%v)", fan, bindingsOf(l))
	}
	if got := best(t, f, "get_user", "get_order"); got != "order_id=$result.orders[said]" {
		t.Errorf("first binding %s (%v), want order_id=$result.orders[said]", got, bindingsOf(l))
	}
}
