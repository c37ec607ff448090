package flow

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

// A binding's held-out hit rate gates its offers by the agent's model,
// backed off to every model's when the model was seen on few offers
// (issue 26, lever 2): get_order after get_user, by $result.orders[*], hit
// 9 of 10 offers for "careful", 2 of 20 for "hasty", and 1 of 2 for
// "rare". Where the fan-out is gated, the lookup's next binding,
// $result.orders[0], is offered only when its own held-out rate is known
// and clears the gate.
func TestServeHeldOutByAgent(t *testing.T) {
	held := &HeldOut{Site: "get_user", Lookup: "get_order", Binding: 0, Offers: Count{N: 32}, Hits: Count{N: 12}, Agents: map[string]AgentCounts{
		"careful": {Offers: Count{N: 10}, Hits: Count{N: 9}},
		"hasty":   {Offers: Count{N: 20}, Hits: Count{N: 2}},
		"rare":    {Offers: Count{N: 2}, Hits: Count{N: 1}},
	}}
	f := shopFlow(t)
	f.Arbiter = &Arbiter{Features: []string{FeatureBias}, Weights: []float64{0}, HeldOut: []HeldOut{*held}}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	// orderBinding returns the binding get_order was offered by, "" if
	// it was not.
	orderBinding := func(agent string) string {
		s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}, Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		ds, _ := serve(t, s, answerShop)
		for _, d := range ds {
			for _, o := range d.Offers {
				if o.Tool == "get_order" {
					return o.Binding["x"]
				}
			}
		}
		return ""
	}
	offered := func(agent string) bool { return orderBinding(agent) == "$result.orders[*]" }
	if got := orderBinding("hasty"); got != "" {
		t.Errorf("hasty: get_order offered by %s, want nothing (the next binding has no held-out rate)", got)
	}
	// Pooled: (12+½)/(32+1) = 0.38, above the threshold.
	for agent, want := range map[string]bool{"careful": true, "hasty": false, "rare": true, "": true, "unseen": true} {
		if got := offered(agent); got != want {
			t.Errorf("agent %q: get_order over $result.orders[*] offered %v, want %v (rate %.3f)", agent, got, want, held.Rate(-1, agent, AgentFactor([]HeldOut{*held}, -1, agent)))
		}
	}
	// Without the gate, every agent is offered it; and the counts of
	// another binding of the lookup do not gate this one.
	f.Arbiter.HeldOut = nil
	if !offered("hasty") {
		t.Error("without held-out rates, get_order is not offered to hasty")
	}
	other := *held
	other.Binding = 1
	f.Arbiter.HeldOut = []HeldOut{other}
	if !offered("hasty") {
		t.Error("gated by another binding's held-out rate")
	}
	// The next binding with a rate of its own that clears the gate is
	// offered where the fan-out is gated: hasty read the first order 8
	// of 10 times it was offered.
	first := HeldOut{Site: "get_user", Lookup: "get_order", Binding: 1, Offers: Count{N: 20}, Hits: Count{N: 15}, Agents: map[string]AgentCounts{
		"hasty": {Offers: Count{N: 10}, Hits: Count{N: 8}},
	}}
	f.Arbiter.HeldOut = []HeldOut{*held, first}
	if got := orderBinding("hasty"); got != "$result.orders[0]" {
		t.Errorf("hasty, the first order's rate known: get_order offered by %q, want $result.orders[0]", got)
	}
	if got := orderBinding("careful"); got != "$result.orders[*]" {
		t.Errorf("careful: get_order offered by %q, want $result.orders[*]", got)
	}
	// Too few offers in the served fold: no gate.
	few := &HeldOut{Offers: Count{N: HeldOutMinOffers - 1}, Hits: Count{N: 0}}
	if p := few.Rate(-1, "", 1); !math.IsNaN(p) {
		t.Errorf("rate of %d offers = %v, want NaN (no gate)", HeldOutMinOffers-1, p)
	}
}

// A flow whose held-out counts are out of range is refused, naming the
// field.
func TestHeldOutValidate(t *testing.T) {
	f := shopFlow(t)
	f.Arbiter = &Arbiter{Features: []string{FeatureBias}, Weights: []float64{0}, HeldOut: []HeldOut{
		{Site: "get_user", Lookup: "get_order", Binding: 0, Offers: Count{N: 5}, Hits: Count{N: 3}, Agents: map[string]AgentCounts{
			"m": {Offers: Count{N: 2}, Hits: Count{N: 3}},
		}},
	}}
	err := f.Validate()
	if err == nil || err.Error() != `arbiter.held_out[0].agents["m"].hits.n: 3 out of range 0..2` {
		t.Errorf("Validate: %v", err)
	}
}

// Held-out counts of a binding the flow does not have are refused.
func TestHeldOutOfNoBinding(t *testing.T) {
	f := shopFlow(t)
	f.Arbiter = &Arbiter{Features: []string{FeatureBias}, Weights: []float64{0}, HeldOut: []HeldOut{
		{Site: "get_user", Lookup: "get_order", Binding: 2, Offers: Count{N: 5}, Hits: Count{N: 3}},
	}}
	err := f.Validate()
	if err == nil || err.Error() != `arbiter.held_out[0]: site get_user (failed false), lookup get_order, binding 2: no such binding` {
		t.Errorf("Validate: %v", err)
	}
}

// A binding's held-out hit rate is taken where its lookup's predicate put
// the site: scaled by P(reach | the predicate's outcome) / P(reach). The
// one-stop search with the direct search's arguments is made after 9 of
// 20 direct searches, 8 of the 10 that found nothing and 1 of the 10
// that found flights; its offers hit 10 of 40 times held out (0.26, below
// the threshold): after an empty search it is offered, after one that
// found flights it is not, and without the predicate it is never.
func TestServeHeldOutByPredicate(t *testing.T) {
	contract := Contract{"origin": {Type: "string", Required: true}}
	f := &Flow{
		Version: Version, Domain: "air", Servers: []string{"air"}, MinSupport: 2,
		Tools: map[string]Tool{
			"search_direct":  {Server: "air", Kind: episode.Read, Input: contract},
			"search_onestop": {Server: "air", Kind: episode.Read, Input: contract},
		},
		Sites: []Site{{Tool: "search_direct", Count: Count{N: 20}, Lookups: []Lookup{{
			Tool: "search_onestop", Reach: Count{N: 9}, Habit: Count{N: 9},
			Bindings:  []Bound{{Args: map[string]binding.Expr{"origin": binding.MustParse("$args.origin")}, Matched: Count{N: 9}}},
			Predicate: &Predicate{When: binding.MustParseCond("$result"), Held: Count{N: 10}, Reach: Count{N: 1}},
		}}}},
	}
	f.Arbiter = &Arbiter{Features: []string{FeatureBias}, Weights: []float64{0}, HeldOut: []HeldOut{
		{Site: "search_direct", Lookup: "search_onestop", Offers: Count{N: 40}, Hits: Count{N: 10}},
	}}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	offered := func(result string) bool {
		s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}})
		if err != nil {
			t.Fatal(err)
		}
		i := s.Call("search_direct", json.RawMessage(`{"origin":"JFK"}`))
		s.Result(i, result, false)
		d := s.Run(i).Next()
		return len(d.Offers) > 0
	}
	for result, want := range map[string]bool{`[]`: true, `[{"flight_number":"HAT001"}]`: false} {
		if got := offered(result); got != want {
			t.Errorf("after %s: search_onestop offered %v, want %v", result, got, want)
		}
	}
	f.Sites[0].Lookups[0].Predicate = nil
	if offered(`[]`) {
		t.Error("without the predicate, search_onestop offered at a held-out rate of 0.26")
	}
	// The scaling gates too: at a held-out rate of 16 of 40 (0.41) the
	// search is offered without the predicate, and after a search that
	// found flights, where it is made a ninth as often, it is not.
	f.Arbiter.HeldOut[0].Hits = Count{N: 16}
	if !offered(`[{"flight_number":"HAT001"}]`) {
		t.Error("without the predicate, search_onestop not offered at a held-out rate of 0.41")
	}
	f.Sites[0].Lookups[0].Predicate = &Predicate{When: binding.MustParseCond("$result"), Held: Count{N: 10}, Reach: Count{N: 1}}
	if offered(`[{"flight_number":"HAT001"}]`) {
		t.Error("after a search that found flights, search_onestop offered at 0.41 scaled by 0.1/0.45")
	}
	if !offered(`[]`) {
		t.Error("after an empty search, search_onestop not offered at 0.41 scaled by 0.8/0.45")
	}
}

// A binding the gate stops stops those below it only where it binds: the
// products of an order's gifts, gated, are not in this order, so the
// first item's product, the fit's offers of it unknown, is offered as
// before the gate.
func TestServeStoppedBindingMustBind(t *testing.T) {
	f := productFlow(t, []Bound{
		{Args: map[string]binding.Expr{"x": binding.MustParse("$result.gifts[*].product_id")}, Matched: Count{N: 4}, Calls: &Count{N: 20}, Used: &Count{N: 12}},
		{Args: map[string]binding.Expr{"x": binding.MustParse("$result.items[0].product_id")}, Matched: Count{N: 6}},
	}, HeldOut{Site: "get_order", Lookup: "get_product", Binding: 0, Offers: Count{N: 40}, Hits: Count{N: 4}})
	if got, want := productOffers(t, f, ""), []string{`get_product {"x":"p1"}`}; !slices.Equal(got, want) {
		t.Errorf("offers %v, want %v", got, want)
	}
}

// productFlow is a shop's flow with one lookup, get_product after
// get_order, of these bindings, and these held-out counts.
func productFlow(t *testing.T, bindings []Bound, held ...HeldOut) *Flow {
	t.Helper()
	contract := Contract{"x": {Type: "string", Required: true}}
	f := &Flow{
		Version: Version, Domain: "shop", Servers: []string{"shop"}, MinSupport: 2,
		Tools: map[string]Tool{
			"get_order":   {Server: "shop", Kind: episode.Read, Input: contract},
			"get_product": {Server: "shop", Kind: episode.Read, Input: contract},
		},
		Sites: []Site{{Tool: "get_order", Count: Count{N: 20}, Lookups: []Lookup{{
			Tool: "get_product", Reach: Count{N: 15}, Habit: Count{N: 15}, Bindings: bindings,
		}}}},
	}
	f.Arbiter = &Arbiter{Features: []string{FeatureBias}, Weights: []float64{0}, HeldOut: held}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

// productOffers returns the labels of what f offers after an order of a
// lamp and a chair, the customer having said said (nothing if "").
func productOffers(t *testing.T, f *Flow, said string) []string {
	t.Helper()
	s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	if said != "" {
		s.Message("user", said)
	}
	i := s.Call("get_order", json.RawMessage(`{"x":"#W1"}`))
	s.Result(i, `{"items":[{"name":"Lamp","product_id":"p1"},{"name":"Chair","product_id":"p2"}]}`, false)
	var got []string
	for _, o := range s.Run(i).Next().Offers {
		got = append(got, o.Label())
	}
	return got
}

// A lookup whose binding of most value is gated by its held-out hit rate
// is offered by its next binding that binds and is not: every product of
// an order earns more in the counts than the product of the item the
// customer named, but its offers hit 4 of 40 times held out, so the named
// one, whose offers hit 12 of 20, is offered. Without a held-out rate of
// its own (the fit never offered it), it is not.
func TestServeHeldOutNextBinding(t *testing.T) {
	f := productFlow(t, []Bound{
		{Args: map[string]binding.Expr{"x": binding.MustParse("$result.items[*].product_id")}, Matched: Count{N: 4}, Calls: &Count{N: 20}, Used: &Count{N: 12}},
		{Args: map[string]binding.Expr{"x": binding.MustParse("$result.items[said.name].product_id")}, Matched: Count{N: 8}, Calls: &Count{N: 10}, Used: &Count{N: 9}},
	},
		HeldOut{Site: "get_order", Lookup: "get_product", Binding: 0, Offers: Count{N: 40}, Hits: Count{N: 4}},
		HeldOut{Site: "get_order", Lookup: "get_product", Binding: 1, Offers: Count{N: 20}, Hits: Count{N: 12}})
	if v0, v1 := f.Sites[0].Lookups[0].Bindings[0].Value(-1, DefaultThreshold, 1), f.Sites[0].Lookups[0].Bindings[1].Value(-1, DefaultThreshold, 1); v0 <= v1 {
		t.Fatalf("values %v and %v: want every product's first", v0, v1)
	}
	offers := func() []string { return productOffers(t, f, "The lamp I ordered is broken.") }
	if got, want := offers(), []string{`get_product {"x":"p1"}`}; !slices.Equal(got, want) {
		t.Errorf("offers %v, want %v", got, want)
	}
	f.Arbiter.HeldOut = f.Arbiter.HeldOut[:1]
	if got := offers(); len(got) != 0 {
		t.Errorf("the named item's binding without a held-out rate: offers %v, want none", got)
	}
}
