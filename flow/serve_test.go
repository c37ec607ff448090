package flow

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

// shopFlow: after find_user (10 times), get_user was reached 8 times
// (habit 6), bound by $text 8 times; after get_user (10), get_order each
// order (reach 9, habit 9, binding 9); get_item reach 3 below threshold.
func shopFlow(t testing.TB) *Flow {
	t.Helper()
	contract := func(arg string) Contract { return Contract{arg: {Type: "string", Required: true}} }
	b := func(expr string) map[string]binding.Expr {
		return map[string]binding.Expr{"x": binding.MustParse(expr)}
	}
	f := &Flow{
		Version: Version, Domain: "shop", Servers: []string{"shop"}, MinSupport: 2,
		Tools: map[string]Tool{
			"find_user": {Server: "shop", Kind: episode.Read, Input: contract("x")},
			"get_user":  {Server: "shop", Kind: episode.Read, Input: contract("x")},
			"get_order": {Server: "shop", Kind: episode.Read, Input: contract("x")},
			"get_item":  {Server: "shop", Kind: episode.Read, Input: contract("x")},
			"cancel":    {Server: "shop", Kind: episode.Write, Input: contract("x")},
		},
		Sites: []Site{
			{Tool: "find_user", Count: Count{N: 10}, Lookups: []Lookup{
				{Tool: "get_user", Reach: Count{N: 8}, Habit: Count{N: 6}, Bindings: []Bound{{Args: b("$text"), Matched: Count{N: 8}}}},
			}},
			{Tool: "get_order", Count: Count{N: 20}, Lookups: []Lookup{}},
			{Tool: "get_order", Failed: true, Count: Count{N: 4}, Lookups: []Lookup{}},
			{Tool: "get_user", Count: Count{N: 10}, Lookups: []Lookup{
				{Tool: "get_item", Reach: Count{N: 3}, Habit: Count{N: 3}, Bindings: []Bound{{Args: b("$result.first"), Matched: Count{N: 3}}}},
				{Tool: "get_order", Reach: Count{N: 9}, Habit: Count{N: 9}, Bindings: []Bound{
					{Args: b("$result.orders[*]"), Matched: Count{N: 9}},
					{Args: b("$result.orders[0]"), Matched: Count{N: 9}},
				}},
			}},
		},
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

const userText = `{"first":"i1","orders":["#a","#b"]}`

// serve runs the flow after the agent's find_user, answering every lookup
// with answer, and returns the decisions and the run line.
func serve(t *testing.T, s *Session, answer func(o Offer) (string, bool)) ([]Decision, RunRecord) {
	t.Helper()
	i := s.Call("find_user", json.RawMessage(`{"x":"c7@example.com"}`))
	s.Result(i, "user_7", false)
	run := s.Run(i)
	var ds []Decision
	for {
		d := run.Next()
		ds = append(ds, d)
		if d.Taken < 0 {
			break
		}
		if answer != nil {
			text, failed := answer(d.Offers[d.Taken])
			run.Answer(text, failed)
		}
		if len(ds) > 100 {
			t.Fatal("run does not end")
		}
	}
	return ds, run.End()
}

func answerShop(o Offer) (string, bool) {
	switch o.Tool {
	case "get_user":
		return userText, false
	case "get_order":
		return `{"id":1}`, strings.Contains(string(o.Args), "#b")
	}
	return "{}", false
}

func values(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Value())
	}
	return out
}

func TestServeChained(t *testing.T) {
	s, err := NewSession(shopFlow(t), Options{Rule: Rule{Threshold: DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	ds, run := serve(t, s, answerShop)
	// get_item scores 0.3 × 1, exactly the threshold: taken, last.
	want := []string{`get_user {"x":"user_7"}`, `get_order {"x":"#a"}`, `get_order {"x":"#b"}`, `get_item {"x":"i1"}`, "stop"}
	if d := cmp.Diff(want, values(ds)); d != "" {
		t.Errorf("decisions (-want +got):\n%s", d)
	}
	if o := ds[0].Offers[0]; o.PReach != 0.8 || o.PHabit != 0.6 || o.PBinding != 1 || o.Support != 10 || o.From != "find_user" {
		t.Errorf("offer %+v", o)
	}
	var sites []string
	for _, st := range run.Sites {
		sites = append(sites, st.Address+"="+st.Value)
	}
	wantSites := []string{`decide#0=get_user {"x":"user_7"}`, "obs#0=ok", `decide#1=get_order {"x":"#a"}`, "obs#1=ok",
		`decide#2=get_order {"x":"#b"}`, "obs#2=error", `decide#3=get_item {"x":"i1"}`, "obs#3=ok", "decide#4=stop"}
	if d := cmp.Diff(wantSites, sites); d != "" {
		t.Errorf("sites (-want +got):\n%s", d)
	}
	if run.MaxLookups != 8 || run.Call != "find_user" || run.Failed {
		t.Errorf("run data %+v", run)
	}
	// Answers, smoothed by one each side: get_user never failed in 10
	// (ok 11/12); get_order failed 4 times in 24 (ok 21/26, error 5/26);
	// get_item was never a site (1/2).
	wantSurprise := -(math.Log(11.0/12) + math.Log(21.0/26) + math.Log(5.0/26) + math.Log(0.5))
	if math.Abs(run.Surprise-wantSurprise) > 1e-12 {
		t.Errorf("surprise %v, want %v", run.Surprise, wantSurprise)
	}
	for _, st := range run.Sites {
		if strings.HasPrefix(st.Address, "decide#") && st.LogP != 0 {
			t.Errorf("greedy without exploring: %s logp %v, want 0", st.Address, st.LogP)
		}
	}
}

func TestServeThresholdBoundary(t *testing.T) {
	for _, tc := range []struct {
		threshold float64
		want      int // lookups taken
	}{{0.3, 4}, {0.30000001, 3}, {0.8, 3}, {0.81, 0}} {
		s, _ := NewSession(shopFlow(t), Options{Rule: Rule{Threshold: tc.threshold}})
		ds, _ := serve(t, s, answerShop)
		if got := len(ds) - 1; got != tc.want {
			t.Errorf("threshold %v: %d lookups %v, want %d", tc.threshold, got, values(ds), tc.want)
		}
	}
	// The habit decider: get_user's P is 0.6, get_item's 0.3.
	s, _ := NewSession(shopFlow(t), Options{Rule: Rule{Decider: Habit, Threshold: 0.61}})
	if ds, _ := serve(t, s, answerShop); len(ds) != 1 {
		t.Errorf("habit at 0.61 took %v", values(ds))
	}
}

func TestServeCaps(t *testing.T) {
	s, _ := NewSession(shopFlow(t), Options{Rule: Rule{Threshold: 0.3}, Caps: Caps{PerCall: 2, PerSession: 3, Questions: 300}})
	ds, run := serve(t, s, answerShop)
	if len(ds) != 3 || run.MaxLookups != 2 {
		t.Errorf("per-call cap 2: %v, max_lookups %d", values(ds), run.MaxLookups)
	}
	// One left in the session; find_user's next site again offers get_user,
	// which was answered since the last write, so nothing is repeated.
	ds, run = serve(t, s, answerShop)
	if len(ds) != 1 || run.MaxLookups != 1 {
		t.Errorf("no repeat since the last write: %v, max %d", values(ds), run.MaxLookups)
	}
	// A write clears what was answered; the session has one lookup left.
	w := s.Call("cancel", json.RawMessage(`{"x":"#a"}`))
	s.Result(w, "ok", false)
	ds, run = serve(t, s, answerShop)
	if len(ds) != 2 || run.MaxLookups != 1 {
		t.Errorf("after a write, one left: %v, max %d", values(ds), run.MaxLookups)
	}
	ds, run = serve(t, s, answerShop)
	if len(ds) != 1 || run.MaxLookups != 0 || len(ds[0].Offers) != 0 {
		t.Errorf("session cap spent: %v, max %d", values(ds), run.MaxLookups)
	}
}

func TestServeInFlightCountsAsAsked(t *testing.T) {
	s, _ := NewSession(shopFlow(t), Options{Rule: Rule{Threshold: 0.3}})
	s.Call("get_user", json.RawMessage(`{"x": "user_7"}`)) // sent in the same turn, not back yet
	ds, _ := serve(t, s, answerShop)
	if len(ds) != 1 {
		t.Errorf("a call in flight was looked up: %v", values(ds))
	}
}

func TestServeNever(t *testing.T) {
	listed := func(kind episode.Kind, schema string) []episode.Tool {
		return []episode.Tool{{Name: "get_user", Kind: kind, InputSchema: json.RawMessage(schema)}}
	}
	same := `{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`
	for _, tc := range []struct {
		name   string
		opt    Options
		listed []episode.Tool
		why    string
	}{
		{"readOnlyHint false", Options{}, listed(episode.Write, same), "readOnlyHint: false"},
		{"contract changed", Options{}, listed(episode.Read, `{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`), "another input contract"},
		{"contract gains an argument", Options{}, listed(episode.Read, `{"type":"object","properties":{"x":{"type":"string"},"y":{}},"required":["x"]}`), "another input contract"},
		{"flow-tools", Options{Tools: []string{"get_order"}}, nil, "not in --flow-tools"},
		{"unchanged", Options{}, listed(episode.Read, same), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.Rule.Threshold = 0.3
			s, err := NewSession(shopFlow(t), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			s.Listed(tc.listed)
			if got := s.Never("get_user"); !strings.Contains(got, tc.why) || (tc.why == "") != (got == "") {
				t.Errorf("Never = %q, want %q", got, tc.why)
			}
			ds, _ := serve(t, s, answerShop)
			if looked := len(ds) > 1; looked != (tc.why == "") {
				t.Errorf("decisions %v", values(ds))
			}
		})
	}
	if got := (&Session{tools: map[string]string{}}).Never("cancel"); got == "" {
		t.Error("an unknown tool is never looked up")
	}
	s, _ := NewSession(shopFlow(t), Options{})
	if got := s.Never("cancel"); got != "a write tool" {
		t.Errorf("Never(cancel) = %q", got)
	}
}

func TestServeUnknownServer(t *testing.T) {
	_, err := NewSession(shopFlow(t), Options{Server: "docs"})
	if !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), `"docs"`) {
		t.Errorf("err = %v", err)
	}
}

func TestExplorePropensities(t *testing.T) {
	run := func(seed uint64) ([]Decision, RunRecord) {
		s, err := NewSession(shopFlow(t), Options{Rule: Rule{Threshold: 0.5, Epsilon: 0.3}, Rand: rand.New(rand.NewPCG(seed, 1))})
		if err != nil {
			t.Fatal(err)
		}
		var ds []Decision
		var runs []RunRecord
		for k := 0; k < 20; k++ {
			d, r := serve(t, s, answerShop)
			ds = append(ds, d...)
			runs = append(runs, r)
			w := s.Call("cancel", nil)
			s.Result(w, "ok", false)
		}
		return ds, runs[len(runs)-1]
	}
	a, ra := run(7)
	b, rb := run(7)
	if d := cmp.Diff(values(a), values(b)); d != "" {
		t.Errorf("the same seed explores differently:\n%s", d)
	}
	if d := cmp.Diff(ra, rb); d != "" {
		t.Errorf("the same seed gives another run:\n%s", d)
	}
	explored := 0
	for _, d := range a {
		_, p := Propensities(d.Rule, d.Offers)
		sum := 0.0
		for _, x := range p {
			sum += x
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("%s: propensities %v sum to %v", d.Site, p, sum)
		}
		taken := d.Taken
		if taken < 0 {
			taken = len(d.Offers)
		}
		if p[taken] != d.Propensity || d.Propensity <= 0 {
			t.Errorf("%s: logged propensity %v, rule gives %v", d.Site, d.Propensity, p[taken])
		}
		if d.Taken != d.Greedy {
			explored++
		}
	}
	if explored == 0 {
		t.Error("ε = 0.3 never explored in 20 runs")
	}
	// The docs/ope.md example: d = (0.5, 0.3, 0.15, 0.05), greedy A, ε 0.2,
	// exploring without the greedy one.
	offers := []Offer{{PReach: 0.5, PBinding: 1}, {PReach: 0.3, PBinding: 1}, {PReach: 0.15, PBinding: 1}, {PReach: 0.05, PBinding: 1}}
	g, p := Propensities(Rule{Threshold: 0.3, Epsilon: 0.2}, offers)
	want := []float64{0.8, 0.2 * 0.3 / 0.5, 0.2 * 0.15 / 0.5, 0.2 * 0.05 / 0.5, 0}
	if g != 0 || !cmp.Equal(want, p, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-12 })) {
		t.Errorf("greedy %d, p %v, want 0, %v", g, p, want)
	}
}

func TestRescore(t *testing.T) {
	f := shopFlow(t)
	rule := Rule{Decider: Reach, Threshold: 0.5, Epsilon: 0.25}
	s, _ := NewSession(f, Options{Rule: rule, Rand: rand.New(rand.NewPCG(3, 4)), TaskID: "t1"})
	ds, run := serve(t, s, answerShop)
	// Through the log's JSON, as hoist evaluate would read it.
	ds, run = roundTrip(t, ds), roundTrip(t, []RunRecord{run})[0]
	again, err := Rescore(f, rule, ds, run)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(run, again); d != "" {
		t.Errorf("re-scored under the same rule (-logged +rescored):\n%s", d)
	}
	// Under a greedy rule, the log importance weight of this run.
	greedy := Rule{Decider: Reach, Threshold: 0.5}
	other, err := Rescore(f, greedy, ds, run)
	if err != nil {
		t.Fatal(err)
	}
	if other.Surprise != run.Surprise {
		t.Errorf("another rule changed the answers' surprise")
	}
	if other.LogPolicy() > 0 || run.LogPolicy() > 0 {
		t.Errorf("log policies %v %v", other.LogPolicy(), run.LogPolicy())
	}
	// A trace that does not fit its decisions.
	bad := run
	bad.Sites = append([]RunSite{}, run.Sites...)
	bad.Sites[0].Value = "get_item {}"
	if _, err := Rescore(f, rule, ds, bad); err == nil {
		t.Error("a site whose value its decision did not take re-scored")
	}
}

func roundTrip[T any](t *testing.T, v []T) []T {
	t.Helper()
	var out []T
	for _, x := range v {
		raw, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		var y T
		if err := json.Unmarshal(raw, &y); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		out = append(out, y)
	}
	return out
}

// TestServeSeveralServers: a flow learned across two servers names tools
// server::tool; each proxy looks up only its own server's tools, by their
// own names, and decides from its own server's calls.
func TestServeSeveralServers(t *testing.T) {
	one := map[string]binding.Expr{"q": binding.MustParse("$result.topic")}
	f := &Flow{
		Version: Version, Domain: "support", Servers: []string{"docs", "tickets"}, MinSupport: 1,
		Tools: map[string]Tool{
			"docs::search":     {Server: "docs", Kind: episode.Read},
			"tickets::get":     {Server: "tickets", Kind: episode.Read},
			"tickets::related": {Server: "tickets", Kind: episode.Read},
		},
		Sites: []Site{{Tool: "tickets::get", Count: Count{N: 4}, Lookups: []Lookup{
			{Tool: "docs::search", Reach: Count{N: 4}, Habit: Count{N: 4}, Bindings: []Bound{{Args: one, Matched: Count{N: 4}}}},
			{Tool: "tickets::related", Reach: Count{N: 4}, Habit: Count{N: 4}, Bindings: []Bound{{Args: one, Matched: Count{N: 4}}}},
		}}},
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := NewSession(f, Options{Server: "tickets", Rule: Rule{Threshold: 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	i := s.Call("get", json.RawMessage(`{"id":1}`))
	s.Result(i, `{"topic":"refunds"}`, false)
	run := s.Run(i)
	d := run.Next()
	if len(d.Offers) != 1 || d.Offers[0].Tool != "tickets::related" || s.CallName(d.Offers[0].Tool) != "related" {
		t.Errorf("offers %+v", d.Offers)
	}
	if d2 := run.Next(); d2.Taken != -1 {
		t.Errorf("looked up another server's tool: %v", d2.Value())
	}
	// The docs proxy never sees tickets::get, so it decides nothing.
	s, _ = NewSession(f, Options{Server: "docs", Rule: Rule{Threshold: 0.3}})
	i = s.Call("search", json.RawMessage(`{"q":"x"}`))
	s.Result(i, `{}`, false)
	if d := s.Run(i).Next(); len(d.Offers) != 0 {
		t.Errorf("docs offers %+v", d.Offers)
	}
	raw, _ := json.Marshal(d)
	for _, want := range []string{`"site":"decide#0"`, `"binding":{"q":"$result.topic"}`, `"p_reach":1`, `"greedy":0`, `"taken":0`, `"propensity":1`, `"rule":{"decider":"reach","threshold":0.3,"epsilon":0}`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("decision line %s lacks %s", raw, want)
		}
	}
}

func TestServePromoted(t *testing.T) {
	f := shopFlow(t)
	yes, no := true, false
	// find_user is not promoted: its run hands back with the reason. get_user
	// is promoted, and a site without a mark acts as before.
	f.Sites[0].Promoted, f.Sites[0].Reason = &no, "would not pay: hit rate 0.20 (0.05–0.45) ≤ threshold 0.30"
	f.Sites[3].Promoted = &yes
	s, err := NewSession(f, Options{Rule: Rule{Threshold: DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := serve(t, s, answerShop)
	if len(ds) != 1 || ds[0].Taken != -1 || len(ds[0].Offers) != 0 {
		t.Fatalf("unpromoted site decided %v", values(ds))
	}
	if want := "not promoted: " + f.Sites[0].Reason; ds[0].Reason != want {
		t.Errorf("reason %q, want %q", ds[0].Reason, want)
	}
	i := s.Call("get_user", json.RawMessage(`{"x":"user_7"}`))
	s.Result(i, userText, false)
	run := s.Run(i)
	d := run.Next()
	if d.Taken < 0 || d.Reason != "" {
		t.Errorf("promoted site: taken %d, reason %q", d.Taken, d.Reason)
	}
	b, _ := json.Marshal(d)
	if strings.Contains(string(b), `"reason"`) {
		t.Errorf("a decision without a reason logs one: %s", b)
	}
}

// Of a lookup's bindings that bind, the one that earned most is served,
// not the one that reproduced most of the agent's calls: every order
// reproduced 9 calls of 30 (9 − 21 × 0.3 = 2.7), the first order 6 of 6.
func TestServeBindingByValue(t *testing.T) {
	f := shopFlow(t)
	for i := range f.Sites {
		if f.Sites[i].Tool != "get_user" {
			continue
		}
		for j := range f.Sites[i].Lookups {
			if l := &f.Sites[i].Lookups[j]; l.Tool == "get_order" {
				l.Bindings = []Bound{
					{Args: map[string]binding.Expr{"x": binding.MustParse("$result.orders[*]")}, Calls: &Count{N: 30}, Used: &Count{N: 9}},
					{Args: map[string]binding.Expr{"x": binding.MustParse("$result.orders[0]")}, Matched: Count{N: 6}},
				}
			}
		}
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	// A merge ranks them as learn does: by value.
	f.Learned.Digest = DigestPrefix + strings.Repeat("0", 64)
	m, err := Merge(f, f)
	if err != nil {
		t.Fatal(err)
	}
	if l := m.site("get_user", false).Lookups[1]; l.Tool != "get_order" || BindingString(l.Bindings[0].Args) != "x=$result.orders[0]" {
		t.Errorf("merged, get_order's first binding is %s, want x=$result.orders[0]", BindingString(l.Bindings[0].Args))
	}
	s, err := NewSession(f, Options{Rule: Rule{Threshold: DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := serve(t, s, answerShop)
	var orders []string
	for _, d := range ds {
		for _, o := range d.Offers {
			if o.Tool == "get_order" {
				orders = append(orders, string(o.Args)+" "+o.Binding["x"])
			}
		}
	}
	if len(orders) == 0 {
		t.Fatalf("no get_order offered: %v", values(ds))
	}
	for _, o := range orders {
		if o != `{"x":"#a"} $result.orders[0]` {
			t.Errorf("get_order offered %s, want only the first order, by $result.orders[0]", o)
		}
	}
}
