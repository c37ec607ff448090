package earned

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// step is one call of a scripted episode and its result.
type step struct {
	by     episode.Actor
	tool   string
	args   string
	result string
	turn   int
}

// served builds an episode: each step's call, then its result.
func served(steps ...step) *episode.Episode {
	ep := &episode.Episode{ID: "s", Tools: []episode.Tool{
		{Name: "find_user_id_by_email", Kind: episode.Read},
		{Name: "get_user_details", Kind: episode.Read},
		{Name: "get_order_details", Kind: episode.Read},
		{Name: "cancel_pending_order", Kind: episode.Write},
	}}
	for i, s := range steps {
		c := &episode.Call{Index: i, Tool: s.tool, Args: json.RawMessage(s.args), By: s.by, Turn: s.turn}
		c.Result = &episode.Result{CallIndex: i, Text: s.result}
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, Call: c}, episode.Event{Type: episode.EventResult, Result: c.Result})
		for len(ep.Turns) <= s.turn {
			ep.Turns = append(ep.Turns, episode.Turn{Index: len(ep.Turns)})
		}
		ep.Turns[s.turn].Calls = append(ep.Turns[s.turn].Calls, i)
	}
	return ep
}

const (
	userA   = `{"user_id":"user_c15","orders":["#W15a","#W15b"]}`
	orderA  = `{"order_id":"#W15a","status":"pending","item":"lamp-301"}`
	orderB  = `{"order_id":"#W15b","status":"pending","item":"desk-902"}`
	cancelB = `{"order_id":"#W15b","reason":"no longer needed"}`
)

func decision(tool, args string, p float64) flow.Decision {
	return flow.Decision{Type: "decision", Taken: 0, Rule: flow.Rule{Decider: flow.Reach},
		Offers: []flow.Offer{{Tool: tool, Args: json.RawMessage(args), PReach: p, PBinding: 1, From: "x"}}}
}

// TestCancelOrder is make demo's served customer: the flow looked up the
// user's details and both orders after find_user_id_by_email, and the
// agent cancelled the second order with an id it read in the details.
func TestCancelOrder(t *testing.T) {
	ep := served(
		step{episode.Agent, "find_user_id_by_email", `{"email":"c15@example.com"}`, `user_c15`, 0},
		step{episode.Proxy, "get_user_details", `{"user_id":"user_c15"}`, userA, 0},
		step{episode.Proxy, "get_order_details", `{"order_id":"#W15a"}`, orderA, 0},
		step{episode.Proxy, "get_order_details", `{"order_id":"#W15b"}`, orderB, 0},
		step{episode.Agent, "cancel_pending_order", cancelB, `{"status":"cancelled"}`, 1},
	)
	if !Served(ep) {
		t.Fatal("not served")
	}
	e := Of(ep, []flow.Decision{
		decision("get_user_details", `{"user_id":"user_c15"}`, 1),
		decision("get_order_details", `{"order_id":"#W15a"}`, 0.9),
		decision("get_order_details", `{"order_id":"#W15b"}`, 0.9),
	})
	var got []string
	for _, lk := range e.Lookups {
		got = append(got, fmt.Sprintf("%d %s depth %d %s p %.1f", lk.Call, lk.Tool, lk.Depth, lk.Verdict(), lk.P))
	}
	want := []string{
		"1 get_user_details depth 1 used p 1.0",
		"2 get_order_details depth 2 unproven p 0.9",
		"3 get_order_details depth 2 unproven p 0.9",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	if want := (Bounds{1, 2.8, 3}); !near(e.Hits, want) {
		t.Errorf("hits %+v, want %+v", e.Hits, want)
	}
	if want := (Bounds{1, 1.99, 3}); !near(e.Saved, want) {
		t.Errorf("saved %+v, want %+v", e.Saved, want)
	}
	if e.Turns != 2 {
		t.Errorf("%d turns, want 2", e.Turns)
	}
}

// TestPartial: the flow looked up one order of two, and the agent read the
// other itself in its next turn, so that turn was not saved; and it made
// the lookup it was given again, which earned nothing.
func TestPartial(t *testing.T) {
	ep := served(
		step{episode.Agent, "get_user_details", `{"user_id":"user_c15"}`, userA, 0},
		step{episode.Proxy, "get_order_details", `{"order_id":"#W15a"}`, orderA, 0},
		step{episode.Agent, "get_order_details", `{"order_id":"#W15b"}`, orderB, 1},
	)
	e := Of(ep, nil)
	if want := (Bounds{0, 0.5, 1}); !near(e.Hits, want) || e.Lookups[0].Logged {
		t.Errorf("hits %+v, want %+v, unlogged", e.Hits, want)
	}
	if want := (Bounds{}); !near(e.Saved, want) {
		t.Errorf("saved %+v, want none: the level's turn was made", e.Saved)
	}
	ep = served(
		step{episode.Agent, "get_user_details", `{"user_id":"user_c15"}`, userA, 0},
		step{episode.Proxy, "get_order_details", `{"order_id":"#W15a"}`, orderA, 0},
		step{episode.Agent, "get_order_details", `{"order_id":"#W15a"}`, orderA, 1},
	)
	e = Of(ep, nil)
	if lk := e.Lookups[0]; lk.Verdict() != "remade" || !near(e.Hits, Bounds{}) || !near(e.Saved, Bounds{}) {
		t.Errorf("%s, hits %+v, saved %+v: want remade, none", lk.Verdict(), e.Hits, e.Saved)
	}
}

// TestUnserved: an episode without the proxy's calls earned nothing here.
func TestUnserved(t *testing.T) {
	ep := served(step{episode.Agent, "get_user_details", `{"user_id":"user_c15"}`, userA, 0})
	if Served(ep) || len(Of(ep, nil).Lookups) != 0 {
		t.Error("an unserved episode has lookups")
	}
}

// TestSaid: a value first returned by a lookup in the agent's words is use.
func TestSaid(t *testing.T) {
	ep := served(
		step{episode.Agent, "get_user_details", `{"user_id":"user_c15"}`, userA, 0},
		step{episode.Proxy, "get_order_details", `{"order_id":"#W15a"}`, orderA, 0},
	)
	ep.Events = append(ep.Events, episode.Event{Type: episode.EventMessage, Message: &episode.Message{Role: "assistant", Text: "Your lamp-301 is on its way."}})
	if lk := Of(ep, nil).Lookups[0]; lk.Verdict() != "used" {
		t.Errorf("%s, want used", lk.Verdict())
	}
}

func near(a, b Bounds) bool {
	d := func(x, y float64) bool { return x-y < 0.01 && y-x < 0.01 }
	return d(a.Lo, b.Lo) && d(a.Est, b.Est) && d(a.Hi, b.Hi)
}
