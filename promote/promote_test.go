package promote

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/flow"
)

func testFlow(t testing.TB) *flow.Flow {
	t.Helper()
	b := map[string]binding.Expr{"x": binding.MustParse("$text")}
	c := flow.Contract{"x": {Type: "string", Required: true}}
	f := &flow.Flow{
		Version: flow.Version, Domain: "shop", Servers: []string{"shop"}, MinSupport: 1,
		Tools: map[string]flow.Tool{
			"find": {Server: "shop", Kind: episode.Read, Input: c},
			"get":  {Server: "shop", Kind: episode.Read, Input: c},
			"item": {Server: "shop", Kind: episode.Read, Input: c},
			"zap":  {Server: "shop", Kind: episode.Write, Input: c},
		},
		Sites: []flow.Site{
			{Tool: "find", Count: flow.Count{N: 10}, Lookups: []flow.Lookup{{Tool: "get", Reach: flow.Count{N: 9}, Habit: flow.Count{N: 9}, Bindings: []flow.Bound{{Args: b, Matched: flow.Count{N: 9}}}}}},
			{Tool: "get", Count: flow.Count{N: 10}, Lookups: []flow.Lookup{{Tool: "item", Reach: flow.Count{N: 5}, Habit: flow.Count{N: 5}, Bindings: []flow.Bound{{Args: b, Matched: flow.Count{N: 5}}}}}},
			{Tool: "item", Count: flow.Count{N: 10}, Lookups: []flow.Lookup{}},
		},
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

// mem is sessions in memory, and adds them.
type mem = evaluate.Sessions

// asRun is a run as the flow log records it: its decisions and run line.
func asRun(rec flow.RunRecord, ds []flow.Decision) evaluate.Run {
	return evaluate.Run{Server: 0, Call: rec.Call, Failed: rec.Failed, MaxLookups: rec.MaxLookups, Decisions: ds}
}

// session crafts one shadow session: find → "u<i>", then the agent gets
// "u<i>" when useGet, then item "u<i>" never (so get's lookups are detours).
// Its runs are what a shadow proxy would log.
func session(t *testing.T, f *flow.Flow, i int, useGet bool) evaluate.Session {
	t.Helper()
	ep := &episode.Episode{ID: fmt.Sprint(i), Servers: []episode.Server{{Name: "shop"}}}
	for name, tl := range f.Tools {
		ep.Tools = append(ep.Tools, episode.Tool{Name: name, Server: "shop", Kind: tl.Kind, InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`)})
	}
	s, err := flow.NewSession(f, flow.Options{Rule: flow.Rule{Threshold: flow.DefaultThreshold}, Shadow: true})
	if err != nil {
		t.Fatal(err)
	}
	var runs []evaluate.Run
	add := func(tool, arg, result string) {
		idx := len(ep.Calls())
		c := &episode.Call{Index: idx, Server: "shop", Tool: tool, Args: json.RawMessage(`{"x":"` + arg + `"}`), By: episode.Agent, Turn: idx}
		r := &episode.Result{CallIndex: idx, Text: result}
		c.Result = r
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, Call: c}, episode.Event{Type: episode.EventResult, Result: r})
		ep.Turns = append(ep.Turns, episode.Turn{Index: idx, Calls: []int{idx}})
		si := s.Call(tool, c.Args)
		s.Result(si, result, false)
		run := s.Run(si)
		var ds []flow.Decision
		for {
			d := run.Next()
			// Through JSON, as the flow log carries it.
			b, _ := json.Marshal(d)
			var back flow.Decision
			json.Unmarshal(b, &back)
			ds = append(ds, back)
			if d.Taken < 0 {
				break
			}
		}
		runs = append(runs, asRun(run.End(), ds))
	}
	u := fmt.Sprintf("u%d", i)
	add("find", "e", u)
	if useGet {
		add("get", u, "i"+u)
	}
	add("zap", u, "ok")
	return evaluate.Session{Episode: ep, Runs: runs}
}

func TestPromote(t *testing.T) {
	f := testFlow(t)
	var m mem
	for i := range 20 {
		m = append(m, session(t, f, i, true))
	}
	out, rep, err := Promote(context.Background(), m, f, Options{MinRuns: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ShadowRuns != 60 || rep.Unmatched != 0 || rep.Episodes != 20 {
		t.Errorf("report %+v", rep)
	}
	// find: 20 runs, 20 lookups of get, all hits: promoted.
	// get: 20 runs, 20 lookups of item, no hits: would not pay.
	// item: 0 runs: too few.
	want := map[string]string{"find": "", "get": "would not pay", "item": "too few runs"}
	for i, s := range out.Sites {
		r := rep.Sites[i]
		if s.Promoted == nil || *s.Promoted != (want[s.Tool] == "") || !strings.HasPrefix(s.Reason, want[s.Tool]) {
			t.Errorf("site %s: promoted %v, reason %q; report %+v", s.Tool, s.Promoted, s.Reason, r)
		}
	}
	if r := rep.Sites[0]; r.Lookups != 20 || r.Hits != 20 || r.Runs != 20 || r.Value <= 0 {
		t.Errorf("find: %+v", r)
	}
	if err := out.Validate(); err != nil {
		t.Fatal(err)
	}
	if f.Sites[0].Promoted != nil {
		t.Error("promote changed its input flow")
	}

	// With only 5 runs, even find has too few.
	_, rep, _ = Promote(context.Background(), m[:5], f, Options{MinRuns: 10})
	if rep.Sites[0].Promoted || !strings.HasPrefix(rep.Sites[0].Reason, "too few runs: 5") {
		t.Errorf("find on 5 sessions: %+v", rep.Sites[0])
	}

	// A server that now lists another contract for get: find's lookup of it
	// has its contract changed.
	m[0].Episode.Tools = append([]episode.Tool(nil), m[0].Episode.Tools...)
	for i := range m[0].Episode.Tools {
		if m[0].Episode.Tools[i].Name == "get" {
			m[0].Episode.Tools[i].InputSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)
		}
	}
	_, rep, _ = Promote(context.Background(), m, f, Options{MinRuns: 10})
	if rep.Sites[0].Promoted || !strings.HasPrefix(rep.Sites[0].Reason, "contract changed: get") {
		t.Errorf("find with get's contract changed: %+v", rep.Sites[0])
	}
}

// Three agents in ten use the lookup: a hit rate of 0.3, above the
// break-even 0.3/(1 + 0.3) = 0.23, so the site pays 0.09 turns a run; over
// 20 sessions the lower bound of that value is below zero, over 200 it is
// above.
func TestPromoteLowerBound(t *testing.T) {
	f := testFlow(t)
	build := func(n int) mem {
		var m mem
		for i := range n {
			m = append(m, session(t, f, i, i%10 < 3))
		}
		return m
	}
	_, rep, _ := Promote(context.Background(), build(20), f, Options{})
	if s := rep.Sites[0]; s.Promoted || float64(s.HitRate) != 0.3 || !strings.HasPrefix(s.Reason, "would not pay") || !(s.Bound < 0) {
		t.Errorf("20 sessions: %+v", s)
	}
	_, rep, _ = Promote(context.Background(), build(200), f, Options{})
	if s := rep.Sites[0]; !s.Promoted || float64(s.HitRate) != 0.3 || math.Abs(float64(s.Value)-0.09) > 1e-9 || !(s.Bound > 0) {
		t.Errorf("200 sessions: %+v", s)
	}
	if s := rep.Sites[0]; math.Abs(float64(s.BreakEven)-0.3/1.3) > 1e-12 {
		t.Errorf("break-even %v, want 0.3/1.3", s.BreakEven)
	}
}
