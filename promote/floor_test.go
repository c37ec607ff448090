package promote

import (
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/flow"
)

// The anytime floor counts only what a run can be offered (issue 24, item
// 3): a fan-out binding below the flow's minimum support, or a lookup the
// agent never reached, is never offered, so it does not lower the floor
// from −cost to −8 × cost, and two sites whose offerable lookups are the
// same get the same floor.
func TestFloorCountsOfferableBindings(t *testing.T) {
	one := flow.Lookup{Tool: "get_user", Reach: flow.Count{N: 10}, Bindings: []flow.Bound{
		{Args: map[string]binding.Expr{"id": binding.MustParse("$text")}, Matched: flow.Count{N: 10}}}}
	fanRare := flow.Lookup{Tool: "get_order", Reach: flow.Count{N: 10}, Bindings: []flow.Bound{
		{Args: map[string]binding.Expr{"id": binding.MustParse("$result.orders[*]")}, Matched: flow.Count{N: 1}}}}
	unreached := flow.Lookup{Tool: "get_item", Bindings: []flow.Bound{
		{Args: map[string]binding.Expr{"id": binding.MustParse("$result.items[*]")}, Matched: flow.Count{N: 5}}}}
	fan := flow.Lookup{Tool: "get_order", Reach: flow.Count{N: 10}, Bindings: []flow.Bound{
		{Args: map[string]binding.Expr{"id": binding.MustParse("$result.orders[*]")}, Matched: flow.Count{N: 9}}}}
	plain := &flow.Site{Tool: "find_user", Lookups: []flow.Lookup{one}}
	padded := &flow.Site{Tool: "find_user", Lookups: []flow.Lookup{one, fanRare, unreached}}
	fanning := &flow.Site{Tool: "find_user", Lookups: []flow.Lookup{one, fan}}
	const minSupport, cost, perCall = 3, 0.3, 8
	a := Floor(cost, min(perCall, offers(plain, minSupport)), 0)
	b := Floor(cost, min(perCall, offers(padded, minSupport)), 0)
	if a != -cost || b != a {
		t.Errorf("floors %v and %v, want both −cost %v: the padded site's extra lookups are never offered", a, b, -cost)
	}
	if c := Floor(cost, min(perCall, offers(fanning, minSupport)), 0); c != -perCall*cost {
		t.Errorf("a site whose offerable binding fans out: floor %v, want %v", c, -perCall*cost)
	}
}
