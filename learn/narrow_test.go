package learn

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Learn counts a fan-out over every order narrowed to the order the
// customer named (issue 26, lever 3): where a customer named one order the
// agent read that one, elsewhere every order; the whole fan-out's counts
// there are kept beside, and served, a session whose customer named an
// order looks up that one only.
func TestLearnNarrowed(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 30; n++ {
		var ids []string
		for c := range 3 {
			ids = append(ids, fmt.Sprintf("#W%07d", (n*7919+c*104729)%10000000))
		}
		list, _ := json.Marshal(map[string][]string{"orders": ids})
		named := n%2 == 0
		read := ids
		if named {
			read = ids[1:2]
		}
		calls := []call{{tool: "get_user", args: fmt.Sprintf(`{"user_id":"u%d"}`, n), result: string(list)}}
		for _, id := range read {
			calls = append(calls, call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, id), result: `{}`, turn: 1})
		}
		calls = append(calls, call{tool: "cancel", args: fmt.Sprintf(`{"order_id":%q}`, read[0]), result: `ok`, turn: 2})
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n), calls...)
		if named {
			ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: "It is order " + ids[1] + " I mean."}}}, ep.Events...)
		}
		eps = append(eps, ep)
	}
	f := learnAll(Options{Folds: 3, MinSupport: 2}, eps...)
	l := lookup(t, f, "get_user", "get_order")
	if l == nil {
		t.Fatal("no get_order after get_user")
	}
	var n *flow.Narrow
	for _, b := range l.Bindings {
		if flow.BindingString(b.Args) == "order_id=$result.orders[*]" {
			n = b.Narrow
		}
	}
	if n == nil || n.Calls.N != 15 || n.Used.N != 15 || n.AllCalls.N != 45 || n.AllUsed.N != 15 {
		t.Fatalf("narrowed counts of orders[*]: %+v; want 15 of 15 narrowed, 15 of 45 whole", n)
	}
	for _, ep := range eps[:2] {
		r := flow.ReplayEpisode(f, ep, flow.ReplayOptions{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}, Caps: flow.DefaultCaps})
		want := 3
		if ep.ID == "2" {
			want = 1
		}
		got := 0
		for _, lk := range r.Lookups {
			if lk.From == "get_user" {
				got++
			}
		}
		if got != want {
			t.Errorf("episode %s: %d orders looked up after get_user, want %d", ep.ID, got, want)
		}
	}
}
