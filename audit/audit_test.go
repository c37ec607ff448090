package audit

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// shopFlow: after find_user (10 times) the agent looked up get_user with
// the whole result 8 times; after get_user, get_order with its "order".
func shopFlow(t testing.TB) *flow.Flow {
	t.Helper()
	b := func(expr string) map[string]binding.Expr {
		return map[string]binding.Expr{"x": binding.MustParse(expr)}
	}
	f := &flow.Flow{
		Version: flow.Version, Domain: "shop", Servers: []string{"shop"}, MinSupport: 1,
		Tools: map[string]flow.Tool{
			"find_user": {Server: "shop", Kind: episode.Read},
			"get_user":  {Server: "shop", Kind: episode.Read},
			"get_order": {Server: "shop", Kind: episode.Read},
			"cancel":    {Server: "shop", Kind: episode.Write},
		},
		Sites: []flow.Site{
			{Tool: "find_user", Count: flow.Count{N: 10}, Lookups: []flow.Lookup{
				{Tool: "get_user", Reach: flow.Count{N: 8}, Habit: flow.Count{N: 8}, Bindings: []flow.Bound{{Args: b("$text"), Matched: flow.Count{N: 8}}}},
			}},
			{Tool: "get_user", Count: flow.Count{N: 10}, Lookups: []flow.Lookup{
				{Tool: "get_order", Reach: flow.Count{N: 9}, Habit: flow.Count{N: 9}, Bindings: []flow.Bound{{Args: b("$result.order"), Matched: flow.Count{N: 9}}}},
			}},
		},
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

// step is one call of a crafted episode: its turn, tool, arguments and
// result.
type step struct {
	turn   int
	tool   string
	args   string
	result string
}

// craft builds an episode whose calls are answered one after another.
func craft(id string, steps ...step) *episode.Episode {
	ep := &episode.Episode{ID: id, Domain: "shop", Servers: []episode.Server{{Name: "shop"}}}
	for _, name := range []string{"find_user", "get_user", "get_order"} {
		ep.Tools = append(ep.Tools, episode.Tool{Name: name, Server: "shop", Kind: episode.Read})
	}
	ep.Tools = append(ep.Tools, episode.Tool{Name: "cancel", Server: "shop", Kind: episode.Write})
	for i, s := range steps {
		c := &episode.Call{Index: i, Server: "shop", Tool: s.tool, Args: json.RawMessage(s.args), By: episode.Agent, Turn: s.turn}
		res := &episode.Result{CallIndex: i, Text: s.result}
		c.Result = res
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, Call: c}, episode.Event{Type: episode.EventResult, Result: res})
		for len(ep.Turns) <= s.turn {
			ep.Turns = append(ep.Turns, episode.Turn{Index: len(ep.Turns)})
		}
		ep.Turns[s.turn].Calls = append(ep.Turns[s.turn].Calls, i)
	}
	return ep
}

type memSource []*episode.Episode

func (m memSource) Episodes(_ context.Context, _ episode.Filter, fn func(*episode.Episode) error) error {
	for _, ep := range m {
		if err := fn(ep); err != nil {
			return err
		}
	}
	return nil
}

// orderBytes is what episode a's get_order lookup appends.
var orderBytes = flow.AppendedSize("get_order", []byte(`{"x":"#W1"}`), `{"status":"pending"}`)

// The known answers: episode a saves its get_user and get_order turns (a
// chain); b's get_user lookup is a detour, since the agent wrote first.
func crafted() memSource {
	return memSource{
		craft("a",
			step{0, "find_user", `{"x":"c1@example.com"}`, "user_1"},
			step{1, "get_user", `{"x":"user_1"}`, `{"order":"#W1"}`},
			step{2, "get_order", `{"x":"#W1"}`, `{"status":"pending"}`},
			step{3, "cancel", `{"x":"#W1"}`, "ok"},
		),
		craft("b",
			step{0, "find_user", `{"x":"c2@example.com"}`, "user_2"},
			step{1, "cancel", `{"x":"user_2"}`, "ok"},
			step{2, "get_user", `{"x":"user_2"}`, `{"order":"#W2"}`},
		),
	}
}

func TestWalkKnownAnswers(t *testing.T) {
	f := shopFlow(t)
	eps := crafted()
	opt := Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}}
	a, err := Walk(f, eps[0], opt)
	if err != nil {
		t.Fatal(err)
	}
	// a: get_user and get_order looked up, both hits; turns 1 and 2 saved.
	// Ceiling: turns 1 and 2 (reads of values seen), not 0 (c1@ was not
	// seen) nor 3 (a write).
	// The bytes appended are the two hits' answers.
	bytes := flow.AppendedSize("get_user", []byte(`{"x":"user_1"}`), `{"order":"#W1"}`) + orderBytes
	if want := (Counts{Lookups: 2, Hits: 2, Bytes: bytes, Saved: 2, Ceiling: 2, CeilingConst: 2, CeilingSaid: 2,
		HitBounds: earned.Bounds{Lo: 2, Est: 2, Hi: 2}, SavedBounds: earned.Bounds{Lo: 2, Est: 2, Hi: 2}}); a.Total != want || a.Turns != 4 {
		t.Errorf("a: %+v turns %d, want %+v turns 4", a.Total, a.Turns, want)
	}
	if c := a.Sites["find_user"]; c == nil || c.Lookups != 1 || c.Hits != 1 || c.Saved != 1 {
		t.Errorf("a: find_user site %+v", c)
	}
	if c := a.Sites["get_user"]; c == nil || c.Lookups != 1 || c.Hits != 1 || c.Saved != 1 {
		t.Errorf("a: get_user site %+v", c)
	}
	b, _ := Walk(f, eps[1], opt)
	// b: get_user looked up after find_user, but the agent wrote before
	// it made it: a detour, and its turn is not saved (after a write, the
	// lookup is no longer current). Its own get_user then offers get_order,
	// which the agent never made: a second detour. Turn 2 is within the
	// ceiling.
	if want := (Counts{Lookups: 2, Detours: 2, Ceiling: 1, CeilingConst: 1, CeilingSaid: 1}); b.Total != want || b.Turns != 3 {
		t.Errorf("b: %+v turns %d, want %+v turns 3", b.Total, b.Turns, want)
	}

	rep, err := Run(context.Background(), eps, f, opt)
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Total
	if tot.Lookups != 4 || tot.Hits != 2 || tot.Detours != 2 || rep.Turns != 7 || rep.Episodes != 2 {
		t.Errorf("total %+v, turns %d", tot, rep.Turns)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("precision", tot.Precision.Value, 0.5)
	near("saved", tot.Saved.Value, 2.0/7)
	near("ceiling", tot.Ceiling.Value, 3.0/7)
	if !(tot.Saved.Lo <= tot.Saved.Value && tot.Saved.Value <= tot.Saved.Hi) {
		t.Errorf("saved interval %+v does not hold its estimate", tot.Saved)
	}
	if len(rep.Servers) != 1 || rep.Servers[0].Name != "shop" || rep.Servers[0].Lookups != 4 {
		t.Errorf("servers %+v", rep.Servers)
	}
	if len(rep.Sites) != 2 || rep.Sites[0].Name != "find_user" || rep.Sites[0].Detours != 1 || rep.Sites[0].Ceiling != nil {
		t.Errorf("sites %+v", rep.Sites)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("report does not encode: %v", err)
	}
}

// A flow promoted with find_user not promoted saves nothing there, as the
// proxy would hand back.
func TestWalkUnpromotedSite(t *testing.T) {
	f := shopFlow(t)
	no := false
	f.Sites[0].Promoted, f.Sites[0].Reason = &no, "too few runs"
	a, _ := Walk(f, crafted()[0], Options{Rule: flow.Rule{Threshold: flow.DefaultThreshold}})
	// Only get_order after the agent's own get_user: one lookup, one hit.
	if want := (Counts{Lookups: 1, Hits: 1, Bytes: orderBytes, Saved: 1, Ceiling: 2, CeilingConst: 2, CeilingSaid: 2,
		HitBounds: earned.Bounds{Lo: 1, Est: 1, Hi: 1}, SavedBounds: earned.Bounds{Lo: 1, Est: 1, Hi: 1}}); a.Total != want {
		t.Errorf("%+v, want %+v", a.Total, want)
	}
}

// Caps are the proxy's: one lookup per session leaves the chain at one.
func TestWalkCaps(t *testing.T) {
	f := shopFlow(t)
	a, _ := Walk(f, crafted()[0], Options{Rule: flow.Rule{Threshold: flow.DefaultThreshold}, Caps: flow.Caps{PerCall: 8, PerSession: 1, Questions: 1}})
	if a.Total.Lookups != 1 || a.Total.Saved != 1 {
		t.Errorf("%+v", a.Total)
	}
}

// Identical episodes leave the bootstrap nothing to vary: every interval
// is its estimate.
func TestIntervalsOfIdenticalEpisodes(t *testing.T) {
	f := shopFlow(t)
	var eps memSource
	for range 10 {
		eps = append(eps, crafted()[0])
	}
	rep, err := Run(context.Background(), eps, f, Options{Rule: flow.Rule{Threshold: flow.DefaultThreshold}, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range []*Interval{rep.Total.Precision, &rep.Total.Saved, rep.Total.Ceiling} {
		if math.Abs(iv.Lo-iv.Value) > 1e-12 || math.Abs(iv.Hi-iv.Value) > 1e-12 {
			t.Errorf("interval %+v, want all equal", *iv)
		}
	}
	if rep.Total.Saved.Value != 0.5 || rep.Total.Precision.Value != 1 {
		t.Errorf("saved %v precision %v, want 0.5 and 1", rep.Total.Saved.Value, rep.Total.Precision.Value)
	}
}

// Missed names the calls of ceiling turns the flow did not look up, and
// changes no count.
func TestWalkMissed(t *testing.T) {
	f := shopFlow(t)
	for _, c := range []struct {
		ep      *episode.Episode
		promote bool
		want    []string
	}{
		{crafted()[0], true, nil},
		{crafted()[1], true, []string{`b get_user {"x":"user_2"}`}},  // the lookup went before the write
		{crafted()[0], false, []string{`a get_user {"x":"user_1"}`}}, // find_user's site not promoted
	} {
		g := f
		if !c.promote {
			no := false
			cp := *f
			cp.Sites = append([]flow.Site(nil), f.Sites...)
			cp.Sites[0].Promoted, cp.Sites[0].Reason = &no, "too few runs"
			g = &cp
		}
		var got []string
		opt := Options{Rule: flow.Rule{Threshold: flow.DefaultThreshold}}
		plain, _ := Walk(g, c.ep, opt)
		opt.Missed = func(ep *episode.Episode, call *episode.Call) {
			got = append(got, ep.ID+" "+call.Tool+" "+string(call.Args))
		}
		a, _ := Walk(g, c.ep, opt)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: missed %q, want %q", c.ep.ID, got, c.want)
		}
		if a.Total != plain.Total {
			t.Errorf("%s: with Missed %+v, without %+v", c.ep.ID, a.Total, plain.Total)
		}
	}
}

// The three ceilings: a value from a result, a constant the flow binds,
// and one only the customer said each open one more of them; a value from
// nowhere opens none. The report names the last ceiling the sessions have.
func TestCeilings(t *testing.T) {
	f := shopFlow(t)
	f.Sites[1].Lookups = append(f.Sites[1].Lookups, flow.Lookup{Tool: "find_user", Reach: flow.Count{N: 2}, Habit: flow.Count{N: 2},
		Bindings: []flow.Bound{{Args: map[string]binding.Expr{"x": binding.MustParse(`"help@example.com"`)}, Matched: flow.Count{N: 2}}}})
	ep := craft("c",
		step{0, "find_user", `{"x":"c3@example.com"}`, "user_3"},   // said: conversation
		step{1, "get_user", `{"x":"user_3"}`, `{"order":"#W3"}`},   // results
		step{2, "find_user", `{"x":"help@example.com"}`, "user_0"}, // a constant
		step{3, "get_order", `{"x":"#W9"}`, `{}`},                  // from nowhere
	)
	ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: "I am c3@example.com"}}}, ep.Events...)
	a, err := Walk(f, ep, Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]float64{a.Total.Ceiling, a.Total.CeilingConst, a.Total.CeilingSaid}; got != [3]float64{1, 2, 3} {
		t.Errorf("ceilings %v, want results 1, constants 2, conversation 3", got)
	}
	rep := Summarize([]*Episode{a}, Options{})
	if rep.Reaches != "conversation" || rep.Total.CeilingSaid.Value != 0.75 {
		t.Errorf("reaches %q, conversation ceiling %+v", rep.Reaches, rep.Total.CeilingSaid)
	}
	b, _ := Walk(f, crafted()[0], Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}})
	if rep := Summarize([]*Episode{b}, Options{}); rep.Reaches != "constants" {
		t.Errorf("sessions without a conversation: reaches %q", rep.Reaches)
	}
}

// The reliability table of a replay: each offer once per run, binned by
// the decider's score, against whether the agent made it.
func TestCalibration(t *testing.T) {
	f := shopFlow(t)
	rep, err := Run(context.Background(), crafted(), f, Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}, Calibration: true})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Calibration
	// Offers: get_user after each find_user (0.8: a hit, a detour), and
	// get_order after each get_user (0.9: a hit, a detour).
	if c == nil || c.Offers != 4 || c.Decider != flow.Reach {
		t.Fatalf("calibration %+v", c)
	}
	if b := c.Bins[8]; b.Offers != 2 || b.Hits != 1 || math.Abs(b.MeanP-0.8) > 1e-12 {
		t.Errorf("bin 0.8–0.9: %+v", b)
	}
	if b := c.Bins[9]; b.Offers != 2 || b.Hits != 1 || math.Abs(b.MeanP-0.9) > 1e-12 {
		t.Errorf("bin 0.9–1: %+v", b)
	}
	if math.Abs(c.ECE-0.35) > 1e-12 {
		t.Errorf("ECE %v, want (|0.8−0.5| + |0.9−0.5|)/2 = 0.35", c.ECE)
	}
}

// A turn the flow saved through a template binding is within the results
// ceiling (issue 24, item 4): its value is made of earlier results, though
// not found in them verbatim, so the ceiling never says less than the
// flow saved.
func TestCeilingHoldsTemplateBindings(t *testing.T) {
	f := shopFlow(t)
	f.Sites[1].Lookups[0].Bindings = []flow.Bound{{Args: map[string]binding.Expr{"x": binding.MustParse(`"/orders/" + $result.order`)}, Matched: flow.Count{N: 9}}}
	ep := craft("t",
		step{0, "find_user", `{"x":"c1@example.com"}`, "user_1"},
		step{1, "get_user", `{"x":"user_1"}`, `{"order":"W1"}`},
		step{2, "get_order", `{"x":"/orders/W1"}`, `{"status":"pending"}`},
	)
	a, err := Walk(f, ep, Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Total.Saved != 2 || a.Total.Ceiling < a.Total.Saved {
		t.Errorf("saved %v turns, results ceiling %v: want 2 saved, within the ceiling", a.Total.Saved, a.Total.Ceiling)
	}
}
