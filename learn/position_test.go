package learn

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Learn finds the order the customer picked by its position, not by its
// value (issue 26, lever 5): "my most recent order" is the last of the
// user's list, "the first one" the first, and the agent read that one. The
// [said#] binding reproduces every such lookup, and served, it looks up
// the one order the customer meant.
func TestLearnPosition(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 30; n++ {
		var ids []string
		for c := range 3 {
			ids = append(ids, fmt.Sprintf("#W%07d", (n*7919+c*104729)%10000000))
		}
		list, _ := json.Marshal(map[string][]string{"orders": ids})
		said, read := "I want to change my most recent order.", ids[2]
		if n%2 == 1 {
			said, read = "Please look at the first one.", ids[0]
		}
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":"u%d"}`, n), result: string(list)},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, read), result: `{}`, turn: 1},
			call{tool: "cancel", args: fmt.Sprintf(`{"order_id":%q}`, read), result: `ok`, turn: 2})
		ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: said}}}, ep.Events...)
		eps = append(eps, ep)
	}
	f := learnAll(Options{Folds: 3, MinSupport: 2, Positions: true}, eps...)
	l := lookup(t, f, "get_user", "get_order")
	if l == nil {
		t.Fatal("no get_order after get_user")
	}
	var found []string
	for _, b := range l.Bindings {
		found = append(found, flow.BindingString(b.Args))
	}
	if len(found) == 0 || found[0] != "order_id=$result.orders[said#]" {
		t.Fatalf("bindings %q, want order_id=$result.orders[said#] first", found)
	}
	for _, ep := range eps[:2] {
		r := flow.ReplayEpisode(f, ep, flow.ReplayOptions{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}, Caps: flow.DefaultCaps})
		hits, all := 0, 0
		for _, lk := range r.Lookups {
			if lk.From == "get_user" {
				all++
				if lk.Hit {
					hits++
				}
			}
		}
		if all != 1 || hits != 1 {
			t.Errorf("episode %s: %d orders looked up after get_user, %d of them the agent's; want the one it read", ep.ID, all, hits)
		}
	}
	// Learned without positions (the default), no binding reproduces the lookups.
	f = learnAll(Options{Folds: 3, MinSupport: 2}, eps...)
	if l := lookup(t, f, "get_user", "get_order"); l != nil {
		for _, b := range l.Bindings {
			if s := flow.BindingString(b.Args); s == "order_id=$result.orders[said#]" {
				t.Errorf("learned %s without positions", s)
			}
		}
	}
}
