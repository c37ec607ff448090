package learn

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// withTools adds read tools of the given input schemas to an episode's
// listing.
func withTools(ep *episode.Episode, schemas map[string]string) *episode.Episode {
	for name, s := range schemas {
		ep.Tools = append(ep.Tools, episode.Tool{Name: name, Server: "shop", Kind: episode.Read, InputSchema: json.RawMessage(s)})
	}
	return ep
}

// said puts a user message at the start of an episode.
func said(ep *episode.Episode, text string) *episode.Episode {
	ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: text}}}, ep.Events...)
	return ep
}

func best(t *testing.T, f *flow.Flow, site, tool string) string {
	t.Helper()
	l := lookup(t, f, site, tool)
	if l == nil || len(l.Bindings) == 0 {
		t.Fatalf("%s → %s: no binding (%+v)", site, tool, l)
	}
	return flow.BindingString(l.Bindings[0].Args)
}

// The filesystem server's list-then-read: the path read is the directory
// listed joined with a listed file's name, a template of the site's
// arguments and its text's lines.
func TestLearnTemplate(t *testing.T) {
	fs := map[string]string{
		"list_directory": `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
		"read_text_file": `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
	}
	var eps []*episode.Episode
	for n := 1; n <= 4; n++ {
		dir := fmt.Sprintf("/srv/p%d", n)
		eps = append(eps, withTools(crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "list_directory", args: fmt.Sprintf(`{"path":%q}`, dir), result: fmt.Sprintf("[DIR] sub\n[FILE] notes%d.txt\n[FILE] todo%d.md", n, n)},
			call{tool: "read_text_file", args: fmt.Sprintf(`{"path":"%s/notes%d.txt"}`, dir, n), result: "hello", turn: 1},
			call{tool: "read_text_file", args: fmt.Sprintf(`{"path":"%s/todo%d.md"}`, dir, n), result: "- x", turn: 1},
		), fs))
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2}, eps...)
	if got, want := best(t, f, "list_directory", "read_text_file"), `path=$args.path + "/" + $lines["[FILE] *"][*]`; got != want {
		t.Errorf("binding %s, want %s", got, want)
	}
}

// server-memory's open_nodes takes an array: the names a search found.
func TestLearnArray(t *testing.T) {
	mem := map[string]string{
		"search_nodes": `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`,
		"open_nodes":   `{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}},"required":["names"]}`,
	}
	var eps []*episode.Episode
	for n := 1; n <= 4; n++ {
		eps = append(eps, withTools(crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "search_nodes", args: fmt.Sprintf(`{"query":"q%d"}`, n), result: fmt.Sprintf(`{"entities":[{"name":"ann%d","type":"person"},{"name":"bob%d","type":"person"}]}`, n, n)},
			call{tool: "open_nodes", args: fmt.Sprintf(`{"names":["ann%d","bob%d"]}`, n, n), result: "{}", turn: 1},
		), mem))
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2}, eps...)
	if got, want := best(t, f, "search_nodes", "open_nodes"), `names=[$result.entities[*].name]`; got != want {
		t.Errorf("binding %s, want %s", got, want)
	}
}

// The customer names one of their orders, not always the first: the
// binding reads it from the conversation, and counts every episode.
func TestLearnSaid(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 4; n++ {
		named := fmt.Sprintf("#W%d%c", n, "ab"[n%2])
		eps = append(eps, said(crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":"user_%d"}`, n), result: fmt.Sprintf(`{"orders":["#W%da","#W%db"]}`, n, n)},
			call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, named), result: "{}", turn: 1},
		), fmt.Sprintf("I want to return order %s, thanks", named)))
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2}, eps...)
	l := lookup(t, f, "get_user", "get_order")
	got := best(t, f, "get_user", "get_order")
	if got != "order_id=$result.orders[said]" || l.Bindings[0].PBinding(-1, l.Reach.N) != 1 {
		t.Errorf("best binding %s (%v), want order_id=$result.orders[said] reproducing every call", got, bindingsOf(l))
	}
	// Without the conversation, the first order is right only half the time
	// and the fan-out looks up one order too many.
	for _, ep := range eps {
		ep.Events = ep.Events[1:]
	}
	f = learnAll(Options{Folds: 1, MinSupport: 2}, eps...)
	if l := lookup(t, f, "get_user", "get_order"); l != nil && len(l.Bindings) > 0 && l.Bindings[0].PBinding(-1, l.Reach.N) == 1 {
		t.Errorf("without the conversation a binding reproduces every call: %v", bindingsOf(l))
	}
}

// A value the agent passes in every episode, which an unrelated result
// happens to hold too, is a constant: the path found it by chance.
func TestLearnChanceIsConstant(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 4; n++ {
		eps = append(eps, crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":"user_%d"}`, n), result: fmt.Sprintf(`{"zip":"1000%d","tier":"standard"}`, n)},
			call{tool: "search", args: fmt.Sprintf(`{"zip":"1000%d","mode":"standard"}`, n), result: "[]", turn: 1},
		))
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2}, eps...)
	l := lookup(t, f, "get_user", "search")
	for _, b := range l.Bindings {
		if s := flow.BindingString(b.Args); s == `mode=$result.tier, zip=$result.zip` || s == `mode=$last[get_user].tier, zip=$result.zip` {
			t.Errorf("a coincidence learned as a path: %s", s)
		}
	}
	if got := best(t, f, "get_user", "search"); got != `mode="standard", zip=$result.zip` {
		t.Errorf("best binding %s, want the constant", got)
	}
}

// The agent reads an order's item only when the order was delivered: a
// predicate on the site's result, with its counts.
func TestLearnPredicate(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 20; n++ {
		status := "pending"
		calls := []call{{tool: "get_order", args: fmt.Sprintf(`{"order_id":"#W%d"}`, n), result: fmt.Sprintf(`{"status":%q,"items":[{"item_id":"i%d"}]}`, status, n)}}
		if n%2 == 0 {
			status = "delivered"
			calls[0].result = fmt.Sprintf(`{"status":%q,"items":[{"item_id":"i%d"}]}`, status, n)
			calls = append(calls, call{tool: "get_item", args: fmt.Sprintf(`{"item_id":"i%d"}`, n), result: "{}", turn: 1})
		}
		eps = append(eps, crafted(fmt.Sprint(n), fmt.Sprint(n), calls...))
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2}, eps...)
	l := lookup(t, f, "get_order", "get_item")
	if l == nil || l.Predicate == nil {
		t.Fatalf("no predicate: %+v", l)
	}
	p := l.Predicate
	n := 20
	if w := p.When.String(); w != `$result.status == "delivered"` && w != `$result.status == "pending"` {
		t.Errorf("predicate %s, want one on the status", w)
	}
	if yes, no := p.PWhen(-1, true, l.Reach.N, n), p.PWhen(-1, false, l.Reach.N, n); (yes-0.5)*(no-0.5) >= 0 || max(yes, no) < 0.9 {
		t.Errorf("P(reach | held) %v, P(reach | not) %v: want one near 1, the other near 0", yes, no)
	}
}

// With SaidConditions, the agent reads an order's item when the customer
// said "exchange": a predicate on what was said, learned where no
// condition on the site's result tells.
func TestLearnSaidPredicate(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 20; n++ {
		said := "I would like to return something."
		calls := []call{{tool: "get_order", args: fmt.Sprintf(`{"order_id":"#W%d"}`, n), result: fmt.Sprintf(`{"status":"delivered","items":[{"item_id":"i%d"}]}`, n)}}
		if n%2 == 0 {
			said = "I would like to exchange something."
			calls = append(calls, call{tool: "get_item", args: fmt.Sprintf(`{"item_id":"i%d"}`, n), result: "{}", turn: 1})
		}
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n), calls...)
		ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: said}}}, ep.Events...)
		eps = append(eps, ep)
	}
	if l := lookup(t, learnAll(Options{Folds: 1, MinSupport: 2}, eps...), "get_order", "get_item"); l == nil || l.Predicate != nil {
		t.Fatalf("without SaidConditions: %+v, want the lookup without a predicate", l)
	}
	l := lookup(t, learnAll(Options{Folds: 1, MinSupport: 2, SaidConditions: true}, eps...), "get_order", "get_item")
	if l == nil || l.Predicate == nil {
		t.Fatalf("no predicate: %+v", l)
	}
	if w := l.Predicate.When.String(); w != `said "exchange"` && w != `said "return"` {
		t.Errorf("predicate %s, want said \"exchange\" or \"return\"", w)
	}
}

// With Cues, the words after which the agent reads an order's item much
// more often than after the order overall are learned as the lookup's
// cues ("exchange" and "swap"; not "return", nor the words every customer
// said), with their counts; and no predicate on what was said unless
// SaidConditions asks for one.
func TestLearnCues(t *testing.T) {
	eps := cueEpisodes()
	if l := lookup(t, learnAll(Options{Folds: 1, MinSupport: 2}, eps...), "get_order", "get_item"); l == nil || l.Cues != nil {
		t.Fatalf("without Cues: %+v, want the lookup without cues", l)
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2, Cues: true}, eps...)
	if !f.Learned.Cues {
		t.Error("learned.cues not set")
	}
	l := lookup(t, f, "get_order", "get_item")
	if l == nil {
		t.Fatal("no lookup")
	}
	var words []string
	for _, c := range l.Cues {
		words = append(words, c.Word)
		if c.Said.N != 20 || c.Reach.N != 20 || c.Tasks.N != 20 {
			t.Errorf("cue %q: said %d, reach %d, tasks %d; want 20, 20 and 20", c.Word, c.Said.N, c.Reach.N, c.Tasks.N)
		}
	}
	if got := strings.Join(words, " "); got != "exchange swap" {
		t.Errorf("cues %q, want \"exchange swap\"", got)
	}
	if p := l.Predicate; p != nil && strings.HasPrefix(p.When.String(), "said ") {
		t.Errorf("predicate %s without SaidConditions", p.When)
	}
}

// A word said before the site many times, but in one task's runs only (a
// customer's name, said by every agent that ran the task), is no cue,
// however often the agent made the lookup after it: a cue's support is
// counted in distinct tasks (issue 26).
func TestLearnCuesCountTasks(t *testing.T) {
	eps := cueEpisodes()
	for n := 1; n <= 30; n++ {
		calls := []call{
			{tool: "get_order", args: `{"order_id":"#W900"}`, result: `{"status":"delivered","items":[{"item_id":"i900"}]}`},
			{tool: "get_item", args: `{"item_id":"i900"}`, result: "{}", turn: 1},
		}
		ep := crafted(fmt.Sprint("j", n), "johansson-task", calls...)
		ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: "This is Yusuf Johansson, about my order."}}}, ep.Events...)
		eps = append(eps, ep)
	}
	l := lookup(t, learnAll(Options{Folds: 1, MinSupport: 2, Cues: true}, eps...), "get_order", "get_item")
	if l == nil {
		t.Fatal("no lookup")
	}
	var words []string
	for _, c := range l.Cues {
		words = append(words, c.Word)
	}
	if got := strings.Join(words, " "); got != "exchange swap" {
		t.Errorf("cues %q, want \"exchange swap\" (johansson, said 30 times in one task, is no cue)", got)
	}
}

// cueEpisodes are 80 sessions of an order read: after "exchange" or
// "swap" (20 each) the agent reads its item, after "return" (40) not.
func cueEpisodes() []*episode.Episode {
	var eps []*episode.Episode
	for n := 1; n <= 80; n++ {
		said := "I would like to return something."
		calls := []call{{tool: "get_order", args: fmt.Sprintf(`{"order_id":"#W%d"}`, n), result: fmt.Sprintf(`{"status":"delivered","items":[{"item_id":"i%d"}]}`, n)}}
		if n%4 < 2 {
			said = []string{"I would like to exchange something.", "I would like to swap something."}[n%4]
			calls = append(calls, call{tool: "get_item", args: fmt.Sprintf(`{"item_id":"i%d"}`, n), result: "{}", turn: 1})
		}
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n), calls...)
		ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: said}}}, ep.Events...)
		eps = append(eps, ep)
	}
	return eps
}

// With AgentWords, what the agent said since the customer's last message
// gives predicates, agent said "word", and with Cues cues too, named as
// the agent's (Cue.By): here every customer says the same, and the agent
// reads the order's item after it said "details" before the order was
// read (40 sessions), not after "status" (40). The customer's words give
// no cue, and the agent's said before the customer's last message are not
// in its window.
func TestLearnAgentWords(t *testing.T) {
	eps := agentWordEpisodes()
	l := lookup(t, learnAll(Options{Folds: 1, MinSupport: 2, Cues: true, SaidConditions: true}, eps...), "get_order", "get_item")
	if l == nil || l.Cues != nil || l.Predicate != nil && strings.Contains(l.Predicate.When.String(), "said ") {
		t.Fatalf("without AgentWords: %+v, want the lookup without cues or a said predicate", l)
	}
	f := learnAll(Options{Folds: 1, MinSupport: 2, AgentWords: true}, eps...)
	if !f.Learned.AgentWords || f.Learned.Cues {
		t.Errorf("learned.agent_words %v, cues %v; want true, false", f.Learned.AgentWords, f.Learned.Cues)
	}
	l = lookup(t, f, "get_order", "get_item")
	if l == nil || l.Cues != nil {
		t.Fatalf("AgentWords alone: %+v, want the lookup without cues", l)
	}
	if p := l.Predicate; p == nil || !strings.HasPrefix(p.When.String(), "agent said ") || p.Held.N != 40 || p.Reach.N != 40 && p.Reach.N != 0 {
		t.Errorf("predicate %+v, want agent said, held 40 times", p)
	}
	l = lookup(t, learnAll(Options{Folds: 1, MinSupport: 2, AgentWords: true, Cues: true}, eps...), "get_order", "get_item")
	if l == nil {
		t.Fatal("no lookup")
	}
	var names []string
	for _, c := range l.Cues {
		names = append(names, c.Name())
		if c.Said.N != 40 || c.Reach.N != 40 || c.Tasks.N != 40 {
			t.Errorf("cue %q: said %d, reach %d, tasks %d; want 40, 40 and 40", c.Name(), c.Said.N, c.Reach.N, c.Tasks.N)
		}
	}
	if got := strings.Join(names, " "); got != "agent: details agent: pull" {
		t.Errorf("cues %q, want \"agent: details agent: pull\"", got)
	}
}

// agentWordEpisodes are 80 sessions of an order read whose customers all
// say the same: where the agent said "Let me pull up the details" before
// the order (40), it then reads the order's item; where it said "Let me
// check the status" (40), not.
func agentWordEpisodes() []*episode.Episode {
	var eps []*episode.Episode
	for n := 1; n <= 80; n++ {
		agentSaid := "Let me check the status of that order."
		calls := []call{{tool: "get_order", args: fmt.Sprintf(`{"order_id":"#W%d"}`, n), result: fmt.Sprintf(`{"status":"delivered","items":[{"item_id":"i%d"}]}`, n)}}
		if n%2 == 0 {
			agentSaid = "Let me pull up the details of that order."
			calls = append(calls, call{tool: "get_item", args: fmt.Sprintf(`{"item_id":"i%d"}`, n), result: "{}", turn: 1})
		}
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n), calls...)
		ep.Events = append([]episode.Event{
			{Type: episode.EventMessage, Message: &episode.Message{Role: "assistant", Text: "Hello! Which details can I check?"}},
			{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: "About my order, please."}},
			{Type: episode.EventMessage, Message: &episode.Message{Role: "assistant", Text: agentSaid}},
		}, ep.Events...)
		eps = append(eps, ep)
	}
	return eps
}

// The agent widens a search that found nothing: a predicate on whether
// the site's list is empty ($result, a list that is not), learned where no
// scalar of the result tells; and the same for a list member of an object
// ($result.orders). With NoListConditions, neither.
func TestLearnListPredicate(t *testing.T) {
	var eps []*episode.Episode
	for n := 1; n <= 20; n++ {
		search := call{tool: "search", args: fmt.Sprintf(`{"zip":"1000%d"}`, n), result: `[{"id":"x"}]`}
		user := call{tool: "get_user", args: `{"user_id":"u"}`, result: `{"user_id":"u","orders":["#a"]}`, turn: 1}
		calls := []call{search, user}
		if n%2 == 0 {
			search.result, user.result, user.turn = `[]`, `{"user_id":"u","orders":[]}`, 2
			calls = []call{search, {tool: "other_read", args: fmt.Sprintf(`{"zip":"1000%d"}`, n), result: "[]", turn: 1}, user,
				{tool: "find_user", args: `{"email":"u@example.com"}`, result: "u", turn: 3}}
		}
		eps = append(eps, crafted(fmt.Sprint(n), fmt.Sprint(n), calls...))
	}
	for _, c := range []struct{ site, lookup, want string }{
		{"search", "other_read", "$result"},
		{"get_user", "find_user", "$result.orders"},
	} {
		l := lookup(t, learnAll(Options{Folds: 1, MinSupport: 2}, eps...), c.site, c.lookup)
		if l == nil || l.Predicate == nil {
			t.Fatalf("%s after %s: no predicate: %+v", c.lookup, c.site, l)
		}
		if w := l.Predicate.When.String(); w != c.want {
			t.Errorf("%s after %s: predicate %s, want %s", c.lookup, c.site, w, c.want)
		}
		if yes, no := l.Predicate.PWhen(-1, true, l.Reach.N, 20), l.Predicate.PWhen(-1, false, l.Reach.N, 20); yes > 0.1 || no < 0.9 {
			t.Errorf("%s after %s: P(reach | a list) %v, P(reach | empty) %v", c.lookup, c.site, yes, no)
		}
		if l := lookup(t, learnAll(Options{Folds: 1, MinSupport: 2, NoListConditions: true}, eps...), c.site, c.lookup); l == nil || l.Predicate != nil {
			t.Errorf("%s after %s with NoListConditions: %+v, want no predicate", c.lookup, c.site, l)
		}
	}
}
