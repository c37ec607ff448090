package learn

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Learn finds the item the customer described by a word of its name, not
// by its id or its whole name (issue 26, lever 5): "the lamp" is the item
// named "Desk Lamp", and the agent read that one's product. The [said~]
// binding reproduces every such lookup and, served, looks up that one
// product, not every item's.
func TestLearnDescribed(t *testing.T) {
	names := []string{"Desk Lamp", "Office Chair", "Wireless Earbuds"}
	words := []string{"lamp", "chair", "earbuds"}
	var eps []*episode.Episode
	for n := 1; n <= 30; n++ {
		type item struct {
			Name      string `json:"name"`
			ProductID string `json:"product_id"`
		}
		var items []item
		for c, name := range names {
			items = append(items, item{name, fmt.Sprintf("P%d-%d", n, c)})
		}
		order, _ := json.Marshal(map[string]any{"order_id": fmt.Sprintf("#W%d", n), "items": items})
		pick := n % len(names)
		said := fmt.Sprintf("The %s from my last order is broken.", words[pick])
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":"#W%d"}`, n), result: string(order)},
			call{tool: "get_item", args: fmt.Sprintf(`{"item_id":%q}`, items[pick].ProductID), result: `{}`, turn: 1},
			call{tool: "cancel", args: fmt.Sprintf(`{"order_id":"#W%d"}`, n), result: `ok`, turn: 2})
		ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: said}}}, ep.Events...)
		eps = append(eps, ep)
	}
	const want = "item_id=$result.items[said~].product_id"
	f := learnAll(Options{Folds: 3, MinSupport: 2, Descriptions: true}, eps...)
	l := lookup(t, f, "get_order", "get_item")
	if l == nil {
		t.Fatal("no get_item after get_order")
	}
	var found []string
	for _, b := range l.Bindings {
		found = append(found, flow.BindingString(b.Args))
	}
	if len(found) == 0 || found[0] != want {
		t.Fatalf("bindings %q, want %s first", found, want)
	}
	for _, ep := range eps[:3] {
		r := flow.ReplayEpisode(f, ep, flow.ReplayOptions{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}, Caps: flow.DefaultCaps})
		hits, all := 0, 0
		for _, lk := range r.Lookups {
			if lk.From == "get_order" {
				all++
				if lk.Hit {
					hits++
				}
			}
		}
		if all != 1 || hits != 1 {
			t.Errorf("episode %s: %d products looked up after get_order, %d of them the agent's; want the one it read", ep.ID, all, hits)
		}
	}
	// Learned without descriptions (the default), no binding reads them.
	f = learnAll(Options{Folds: 3, MinSupport: 2}, eps...)
	if l := lookup(t, f, "get_order", "get_item"); l != nil {
		for _, b := range l.Bindings {
			if s := flow.BindingString(b.Args); s == want {
				t.Errorf("learned %s without descriptions", s)
			}
		}
	}
}
