package flow

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

// restFlow: after get_user, get_order over every order ($result.orders[*]);
// after the agent's own get_order, the same over the user's orders read
// from get_user's latest result ($last[get_user].orders[*]), its rest. The
// held-out rates: the fan-out at get_user hit 12 of 20 offers, its rest at
// get_order restHits of 20. The arbiter takes every offer (P = 0.88).
func restFlow(t *testing.T, rest bool, restHits int) *Flow {
	t.Helper()
	contract := Contract{"x": {Type: "string", Required: true}}
	b := func(expr string) map[string]binding.Expr {
		return map[string]binding.Expr{"x": binding.MustParse(expr)}
	}
	c := func(n int) *Count { return &Count{N: n} }
	f := &Flow{
		Version: Version, Domain: "shop", Servers: []string{"shop"}, MinSupport: 2,
		Learned: Provenance{Rest: rest},
		Tools: map[string]Tool{
			"get_user":  {Server: "shop", Kind: episode.Read, Input: contract},
			"get_order": {Server: "shop", Kind: episode.Read, Input: contract},
			"cancel":    {Server: "shop", Kind: episode.Write, Input: contract},
		},
		Sites: []Site{
			{Tool: "get_order", Count: Count{N: 20}, Lookups: []Lookup{
				{Tool: "get_order", Reach: Count{N: 10}, Habit: Count{N: 10}, Bindings: []Bound{
					{Args: b("$last[get_user].orders[*]"), Matched: Count{N: 8}, Calls: c(12), Used: c(10)},
				}},
			}},
			{Tool: "get_user", Count: Count{N: 10}, Lookups: []Lookup{
				{Tool: "get_order", Reach: Count{N: 9}, Habit: Count{N: 9}, Bindings: []Bound{
					{Args: b("$result.orders[*]"), Matched: Count{N: 5}, Calls: c(20), Used: c(12)},
				}},
			}},
		},
		Arbiter: &Arbiter{Features: []string{FeatureBias}, Weights: []float64{2}, HeldOut: []HeldOut{
			{Site: "get_order", Lookup: "get_order", Binding: 0, Offers: Count{N: 20}, Hits: Count{N: restHits}},
			{Site: "get_user", Lookup: "get_order", Binding: 0, Offers: Count{N: 20}, Hits: Count{N: 12}},
		}},
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

// taken runs the flow after the agent's call of tool with args, answered
// text, and returns the arguments of the lookups it takes, answering each
// with "{}".
func taken(t *testing.T, s *Session, tool, args, text string) []string {
	t.Helper()
	i := s.Call(tool, json.RawMessage(args))
	s.Result(i, text, false)
	run := s.Run(i)
	var out []string
	for range 100 {
		d := run.Next()
		if d.Taken < 0 {
			run.End()
			slices.Sort(out)
			return out
		}
		out = append(out, string(d.Offers[d.Taken].Args))
		run.Answer("{}", false)
	}
	t.Fatal("run does not end")
	return nil
}

// A fan-out whose rest earns more, held out, at the agent's first read of
// one element waits for that read: after get_user nothing is looked up;
// after the agent's get_order of #b, the orders it has not read, #a and
// #c. In a flow not learned so, or where the rest earned less than the
// fan-out, every order is looked up after get_user.
func TestServeRestWaitsForFirstRead(t *testing.T) {
	const user = `{"orders":["#a","#b","#c"]}`
	for _, tc := range []struct {
		name         string
		rest         bool
		restHits     int
		atUser, next []string
	}{
		{"rest earns more", true, 18, nil, []string{`{"x":"#a"}`, `{"x":"#c"}`}},
		{"not learned with rest", false, 18, []string{`{"x":"#a"}`, `{"x":"#b"}`, `{"x":"#c"}`}, nil},
		{"rest earns less", true, 10, []string{`{"x":"#a"}`, `{"x":"#b"}`, `{"x":"#c"}`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSession(restFlow(t, tc.rest, tc.restHits), Options{Rule: Rule{Decider: ArbiterDecider, Threshold: DefaultThreshold}})
			if err != nil {
				t.Fatal(err)
			}
			if got := taken(t, s, "get_user", `{"x":"u1"}`, user); !slices.Equal(got, tc.atUser) {
				t.Errorf("after get_user: looked up %q, want %q", got, tc.atUser)
			}
			if got := taken(t, s, "get_order", `{"x":"#b"}`, `{"id":"#b"}`); !slices.Equal(got, tc.next) {
				t.Errorf("after the agent's get_order #b: looked up %q, want %q", got, tc.next)
			}
		})
	}
}

// Learn's fit counts, at the agent's own read, the offers the rest would
// have made had the fan-out waited (Options.Rest): the orders the agent
// had not asked for itself, once each since its last write, though the
// session looked them up after get_user. The flow's lookups are not
// reads of the agent: after one, nothing is counted.
func TestRestCounted(t *testing.T) {
	var told []string
	s, err := NewSession(restFlow(t, true, 10), Options{Rule: Rule{Decider: ArbiterDecider, Threshold: DefaultThreshold},
		Rest: func(o *Offer) { told = append(told, o.From+" "+o.Label()) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := taken(t, s, "get_user", `{"x":"u1"}`, `{"orders":["#a","#b","#c"]}`); len(got) != 3 {
		t.Fatalf("after get_user: looked up %q, want every order", got)
	}
	if len(told) != 0 {
		t.Errorf("told %q at get_user and the flow's own get_order, want nothing", told)
	}
	taken(t, s, "get_order", `{"x":"#b"}`, `{"id":"#b"}`)
	taken(t, s, "get_order", `{"x":"#a"}`, `{"id":"#a"}`)
	want := []string{`get_order get_order {"x":"#a"}`, `get_order get_order {"x":"#c"}`}
	if !slices.Equal(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}
