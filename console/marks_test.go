package console

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// A session's lookups are marked by what they earned (package earned, the
// audit's rule for a served session): made again by the agent before its
// next write, a lookup earned nothing ("remade"); one whose answer the
// agent used is a hit ("used"); one it neither made again nor demonstrably
// used lies between the bounds ("unproven").
func TestSessionMarksLookups(t *testing.T) {
	ep := &episode.Episode{ID: "s1", Source: episode.SourceMCP, Started: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Servers: []episode.Server{{Name: "shop"}},
		Tools:   []episode.Tool{{Name: "get_order", Kind: episode.Read}, {Name: "find_user", Kind: episode.Read}, {Name: "cancel", Kind: episode.Write}}}
	add := func(tool, args string, by episode.Actor, turn int) {
		i := len(ep.Calls())
		c := &episode.Call{Index: i, ID: "x", Server: "shop", Tool: tool, Args: json.RawMessage(args), By: by, Turn: turn,
			Result: &episode.Result{CallIndex: i, Text: "ok " + args}}
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, Call: c}, episode.Event{Type: episode.EventResult, Result: c.Result})
		for len(ep.Turns) <= turn {
			ep.Turns = append(ep.Turns, episode.Turn{Index: len(ep.Turns)})
		}
		ep.Turns[turn].Calls = append(ep.Turns[turn].Calls, i)
	}
	add("find_user", `{"email":"a@b"}`, episode.Agent, 0)
	add("get_order", `{"id":"1"}`, episode.Proxy, 0) // the agent asks for it next: remade
	add("get_order", `{"id":"2"}`, episode.Proxy, 0) // asked for only after a write: unproven
	add("get_order", `{"id": "1"}`, episode.Agent, 1)
	add("cancel", `{"id":"1"}`, episode.Agent, 2)
	add("get_order", `{"id":"2"}`, episode.Agent, 3)

	m := &memSource{rows: []store.Session{sessionRow(ep, 0, &store.Flow{})}, eps: map[string]*episode.Episode{"s1": ep}}
	s, err := New(Options{Source: m})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/session?id=s1", nil))
	body := w.Body.String()
	for _, want := range []string{
		`<li class="call by-proxy remade" data-index="1">`,
		`<li class="call by-proxy unproven" data-index="2">`,
		`data-lookups="2" data-hits="0.5 (0.0–1.0)"`,
		"appended by the proxy: 2 lookups",
		"get_order {&#34;id&#34;:&#34;1&#34;}:\nok {&#34;id&#34;:&#34;1&#34;}",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the session page lacks %q", want)
		}
	}
	w = httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if row := w.Body.String(); !strings.Contains(row, `<td class="n">2</td><td class="n hit-t">0.5 (0.0–1.0)</td><td class="n detour-t">1</td>`) {
		t.Errorf("the list's row does not count 2 lookups, 0.5 (0.0–1.0) hits, 1 detour:\n%s", row)
	}
}
