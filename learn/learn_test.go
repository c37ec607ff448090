package learn

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

var update = flag.Bool("update", false, "rewrite golden files")

// call is one of the agent's calls in a crafted episode: it is sent, then
// answered, in order; turn is its LLM turn.
type call struct {
	tool, args, result string
	turn               int
	failed             bool
}

var shopKinds = map[string]episode.Kind{
	"find_user":  episode.Read,
	"get_user":   episode.Read,
	"get_order":  episode.Read,
	"get_item":   episode.Read,
	"search":     episode.Read,
	"cancel":     episode.Write,
	"calculate":  episode.Generic,
	"other_read": episode.Read,
}

var shopSchemas = map[string]string{
	"find_user": `{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`,
	"get_user":  `{"type":"object","properties":{"user_id":{"type":"string"}},"required":["user_id"]}`,
	"get_order": `{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`,
	"get_item":  `{"type":"object","properties":{"item_id":{"type":"string"}},"required":["item_id"]}`,
	"search":    `{"type":"object","properties":{"zip":{"type":"string"},"mode":{"type":"string"}},"required":["zip"]}`,
	"cancel":    `{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`,
}

func crafted(id, task string, calls ...call) *episode.Episode {
	ep := &episode.Episode{ID: id, Source: episode.SourceMCP, Domain: "shop", TaskID: task, Servers: []episode.Server{{Name: "shop"}}}
	for name, k := range shopKinds {
		ep.Tools = append(ep.Tools, episode.Tool{Name: name, Server: "shop", Kind: k, InputSchema: json.RawMessage(shopSchemas[name])})
	}
	for i, c := range calls {
		if c.args == "" {
			c.args = "{}"
		}
		cl := &episode.Call{Index: i, ID: fmt.Sprint(i), Server: "shop", Tool: c.tool, Args: json.RawMessage(c.args), By: episode.Agent, Turn: c.turn}
		r := &episode.Result{CallIndex: i, Text: c.result, IsError: c.failed}
		cl.Result = r
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, TMS: int64(10 * i), Call: cl}, episode.Event{Type: episode.EventResult, TMS: int64(10*i + 5), Result: r})
	}
	return ep
}

func learnAll(opt Options, eps ...*episode.Episode) *flow.Flow {
	l := New(opt)
	for _, ep := range eps {
		l.Add(ep)
	}
	return l.Flow()
}

func lookup(t *testing.T, f *flow.Flow, site, tool string) *flow.Lookup {
	t.Helper()
	for i := range f.Sites {
		s := &f.Sites[i]
		if s.Tool != site || s.Failed {
			continue
		}
		for j := range s.Lookups {
			if s.Lookups[j].Tool == tool {
				return &s.Lookups[j]
			}
		}
	}
	return nil
}

func bindingsOf(l *flow.Lookup) []string {
	var out []string
	for _, b := range l.Bindings {
		raw, _ := json.Marshal(b.Args)
		out = append(out, fmt.Sprintf("%s×%d", raw, b.Matched.N))
	}
	return out
}

// userEpisode: the agent finds a user by email (a bare id back), reads the
// user, reads each of the user's orders, reads an item of the first order,
// searches with a constant, then cancels.
func userEpisode(n int) *episode.Episode {
	u := fmt.Sprintf("user_%d", n)
	oa, ob := fmt.Sprintf("#W%da", n), fmt.Sprintf("#W%db", n)
	return crafted(fmt.Sprintf("ep%d", n), fmt.Sprintf("task%d", n),
		call{tool: "find_user", args: fmt.Sprintf(`{"email":"c%d@example.com"}`, n), result: u, turn: 0},
		call{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: fmt.Sprintf(`{"user_id":%q,"profile":{"zip":"1000%d"},"orders":[%q,%q]}`, u, n, oa, ob), turn: 1},
		call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, oa), result: fmt.Sprintf(`{"order_id":%q,"items":[{"item_id":"i%d1"},{"item_id":"i%d2"}]}`, oa, n, n), turn: 2},
		call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, ob), result: fmt.Sprintf(`{"order_id":%q,"items":[]}`, ob), turn: 2},
		call{tool: "get_item", args: fmt.Sprintf(`{"item_id":"i%d1"}`, n), result: `{"price":3}`, turn: 3},
		call{tool: "search", args: fmt.Sprintf(`{"zip":"1000%d","mode":"standard"}`, n), result: `[]`, turn: 4},
		call{tool: "cancel", args: fmt.Sprintf(`{"order_id":%q}`, oa), result: "ok", turn: 5},
		call{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: "{}", turn: 6},
	)
}

func TestLearnBindingForms(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 4; n++ {
		eps = append(eps, userEpisode(n))
	}
	f := learnAll(Options{Domain: "shop", Folds: 1, MinSupport: 2}, eps...)
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		site, tool string
		want       []string
		reach      int
		habit      int
	}{
		// The whole text of a bare-id result.
		{"find_user", "get_user", []string{`{"user_id":"$text"}×4`}, 4, 4},
		// Fan-out over a list reproduces 8 calls, one element 4.
		{"get_user", "get_order", []string{`{"order_id":"$result.orders[*]"}×4`, `{"order_id":"$result.orders[0]"}×4`}, 4, 4},
		// An element of a nested list; the site occurs twice an episode, and
		// binds only after the order with items.
		// The fan-out over the items reproduces as many calls (used 4 of 8
		// calls, matched whole never), with detours: it ranks second.
		{"get_order", "get_item", []string{`{"item_id":"$result.items[0].item_id"}×4`, `{"item_id":"$result.items[*].item_id"}×0`}, 8, 8},
		// A nested member of an earlier result, and a constant.
		{"get_item", "search", []string{`{"mode":"\"standard\"","zip":"$last[get_user].profile.zip"}×4`}, 4, 4},
	} {
		l := lookup(t, f, tc.site, tc.tool)
		if l == nil {
			t.Errorf("%s → %s: no lookup", tc.site, tc.tool)
			continue
		}
		if l.Reach.N != tc.reach || l.Habit.N != tc.habit {
			t.Errorf("%s → %s: reach %d habit %d, want %d %d", tc.site, tc.tool, l.Reach.N, l.Habit.N, tc.reach, tc.habit)
		}
		if d := cmp.Diff(tc.want, bindingsOf(l)); d != "" {
			t.Errorf("%s → %s bindings (-want +got):\n%s", tc.site, tc.tool, d)
		}
	}
	// Never a write, nor a generic, and reach stops at the write: get_user
	// after cancel is not a lookup of get_item's site.
	for _, s := range f.Sites {
		for _, l := range s.Lookups {
			if k := f.Tools[l.Tool].Kind; k != episode.Read {
				t.Errorf("site %s offers %s, a %s tool", s.Tool, l.Tool, k)
			}
		}
	}
	if l := lookup(t, f, "search", "get_user"); l != nil {
		t.Errorf("search → get_user learned across a write: %+v", l)
	}
	if l := lookup(t, f, "cancel", "get_user"); l == nil || l.Reach.N != 4 {
		t.Errorf("cancel → get_user: %+v", l)
	}
	golden(t, "binding_forms", f)
}

func TestLearnSupport(t *testing.T) {
	eps := []*episode.Episode{userEpisode(1), userEpisode(2), userEpisode(3)}
	f := learnAll(Options{Folds: 1, MinSupport: 4}, eps...)
	if l := lookup(t, f, "find_user", "get_user"); l == nil || l.Reach.N != 3 || len(l.Bindings) != 0 {
		t.Errorf("min support 4 of 3 episodes kept a binding: %+v", l)
	}
	f = learnAll(Options{Folds: 1, MinSupport: 3}, eps...)
	if l := lookup(t, f, "find_user", "get_user"); l == nil || len(l.Bindings) != 1 {
		t.Errorf("min support 3 of 3 episodes dropped the binding: %+v", l)
	}
	// A value seen once is a constant below support, never a binding.
	one := crafted("x", "tx",
		call{tool: "get_user", args: `{"user_id":"u"}`, result: `{}`},
		call{tool: "get_order", args: `{"order_id":"typed"}`, result: `{}`, turn: 1})
	f = learnAll(Options{Folds: 1, MinSupport: 2}, one)
	if l := lookup(t, f, "get_user", "get_order"); l == nil || len(l.Bindings) != 0 {
		t.Errorf("a one-off constant was kept: %+v", l)
	}
}

func TestLearnFolds(t *testing.T) {
	const k = 3
	var eps []*episode.Episode
	perFold := make([]int, k)
	for n := 1; n <= 12; n++ {
		ep := userEpisode(n)
		eps = append(eps, ep)
		perFold[flow.FoldOf(ep.TaskID, k)]++
	}
	// The same task twice: both count in its fold.
	again := userEpisode(1)
	again.ID = "ep1-again"
	eps = append(eps, again)
	perFold[flow.FoldOf(again.TaskID, k)]++
	f := learnAll(Options{Folds: k, MinSupport: 1}, eps...)
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if f.Learned.Tasks != 12 || f.Learned.Episodes != 13 {
		t.Errorf("provenance %+v", f.Learned)
	}
	l := lookup(t, f, "find_user", "get_user")
	if d := cmp.Diff(perFold, l.Reach.Folds); d != "" {
		t.Errorf("reach per fold (-want +got):\n%s", d)
	}
	for fold := 0; fold < k; fold++ {
		if got, want := l.Reach.For(fold), 13-perFold[fold]; got != want {
			t.Errorf("fold %d serves %d, want %d", fold, got, want)
		}
	}
	// A task's own fold never serves its counts: learn from one task only,
	// and its fold has nothing.
	f = learnAll(Options{Folds: k, MinSupport: 1}, userEpisode(5), userEpisode(5))
	l = lookup(t, f, "find_user", "get_user")
	fold := flow.FoldOf("task5", k)
	if l.Reach.For(fold) != 0 || l.Bindings[0].Matched.For(fold) != 0 {
		t.Errorf("task5's fold is served its own counts: %+v", l)
	}
}

func TestLearnHostSessionFolds(t *testing.T) {
	ep := userEpisode(1)
	ep.TaskID, ep.HostSession = "", "host-42"
	if got := flow.TaskKey(ep); got != "host-42" {
		t.Errorf("TaskKey = %q, want the host session", got)
	}
}

func TestLearnDeterministic(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 6; n++ {
		eps = append(eps, userEpisode(n))
	}
	a, _ := learnAll(Options{}, eps...).Marshal()
	for i := 0; i < 5; i++ {
		b, _ := learnAll(Options{}, eps...).Marshal()
		if !bytes.Equal(a, b) {
			t.Fatalf("learn %d differs:\n%s", i, cmp.Diff(string(a), string(b)))
		}
	}
	g, err := flow.Parse(a, "learned")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := g.Marshal()
	if !bytes.Equal(a, c) {
		t.Errorf("parse and marshal changed the flow:\n%s", cmp.Diff(string(a), string(c)))
	}
}

func golden(t *testing.T, name string, f *flow.Flow) {
	t.Helper()
	got, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".flow.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s (-want +got; -update rewrites):\n%s", path, d)
	}
}

// TestLearnFanOutPartial: the agent checks two of a user's three orders; the
// fan-out over them is credited per call (used 2 of 3), and the calls the
// agent had already made since its last write are not counted against it.
func TestLearnFanOutPartial(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 3; n++ {
		u := fmt.Sprintf("user_%d", n)
		eps = append(eps, crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: fmt.Sprintf(`{"orders":["%da","%db","%dc"]}`, n, n, n)},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":"%da"}`, n), result: `{}`, turn: 1},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":"%db"}`, n), result: `{}`, turn: 2},
			call{tool: "cancel", args: fmt.Sprintf(`{"order_id":"%db"}`, n), result: `ok`, turn: 3},
		))
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2}, eps...)
	l := lookup(t, f, "get_user", "get_order")
	if l == nil || len(l.Bindings) == 0 {
		t.Fatalf("no binding: %+v", l)
	}
	b := l.Bindings[0]
	if got := flow.BindingString(b.Args); got != "order_id=$result.orders[*]" || b.Calls == nil || b.Calls.N != 9 || b.Used.N != 6 || b.Matched.N != 0 {
		t.Fatalf("best binding %s: %+v calls %+v used %+v", got, b, b.Calls, b.Used)
	}
	if p := b.PBinding(-1, l.Reach.N); p != 6.0/9 {
		t.Errorf("P(binding) = %v, want 2/3", p)
	}
	// After the first order, the fan-out's first call was already made:
	// 2 calls of which the agent made 1.
	l = lookup(t, f, "get_order", "get_order")
	if l == nil || len(l.Bindings) == 0 {
		t.Fatalf("get_order → get_order: %+v", l)
	}
	for _, b := range l.Bindings {
		if b.Calls != nil && (b.Calls.N != 6 || b.Used.N != 3) {
			t.Errorf("%s: calls %d used %d, want 6 and 3", flow.BindingString(b.Args), b.Calls.N, b.Used.N)
		}
	}
}

// sliceSource is an episode.Source over a slice.
type sliceSource []*episode.Episode

func (s sliceSource) Episodes(ctx context.Context, f episode.Filter, fn func(*episode.Episode) error) error {
	for _, ep := range s {
		if err := fn(ep); err != nil {
			return err
		}
	}
	return nil
}

var _ episode.Source = sliceSource(nil)

func TestFromSource(t *testing.T) {
	var eps sliceSource
	for n := 1; n <= 5; n++ {
		eps = append(eps, userEpisode(n))
	}
	for n := 1; n <= 3; n++ {
		eps = append(eps, userEpisode(n)) // tasks met twice, in other shards
	}
	eps = append(eps, crafted("c1", "t1", call{tool: "get_user", args: `{"user_id":"u"}`, result: `{}`},
		call{tool: "search", args: `{"zip":"5"}`, result: `[]`, turn: 1}))
	eps = append(eps, crafted("c2", "t2", call{tool: "get_user", args: `{"user_id":"u"}`, result: `{}`},
		call{tool: "search", args: `{"zip":"5"}`, result: `[]`, turn: 1}))
	want, _ := learnAll(Options{Domain: "shop", MinSupport: 2}, eps...).Marshal()
	for workers := 1; workers <= 4; workers++ {
		f, err := FromSource(context.Background(), eps, episode.Filter{}, Options{Domain: "shop", MinSupport: 2, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := f.Marshal()
		if !bytes.Equal(got, want) {
			t.Errorf("FromSource on %d workers learns another flow than Add in order:\n%s", workers, cmp.Diff(string(want), string(got)))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FromSource(ctx, eps, episode.Filter{}, Options{}); err == nil {
		t.Error("a cancelled context learned")
	}
}

// TestLearnConstantNeedsTasks: a value typed in one task, met by several
// agents of that task, is no constant; one used across tasks is.
func TestLearnConstantNeedsTasks(t *testing.T) {
	ep := func(id, task, value string) *episode.Episode {
		return crafted(id, task,
			call{tool: "get_user", args: `{"user_id":"u"}`, result: `{}`},
			call{tool: "search", args: fmt.Sprintf(`{"zip":%q}`, value), result: `[]`, turn: 1})
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2}, ep("a", "t1", "99999"), ep("b", "t1", "99999"), ep("c", "t1", "99999"))
	if l := lookup(t, f, "get_user", "search"); l == nil || len(l.Bindings) != 0 {
		t.Errorf("one task's value became a constant: %+v", l)
	}
	f = learnAll(Options{Folds: 1, MinSupport: 2}, ep("a", "t1", "99999"), ep("b", "t2", "99999"))
	if l := lookup(t, f, "get_user", "search"); l == nil || len(l.Bindings) != 1 {
		t.Errorf("a value of two tasks is not a constant: %+v", l)
	}
}
