package console

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/store"
)

// The session page shows the guards' verdicts, the limits' refusals and
// the judge's answers from the logs beside the session's, each at the
// agent's call of its id.
func TestSessionShowsGuardsAndJudge(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "s1.jsonl")
	ep := &episode.Episode{ID: "s1", Source: episode.SourceMCP, Started: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Servers: []episode.Server{{Name: "shop"}}, Tools: []episode.Tool{{Name: "cancel_pending_order", Kind: episode.Write}}}
	for i, id := range []string{"5", "6", "7"} {
		c := &episode.Call{Index: i, ID: id, Server: "shop", Tool: "cancel_pending_order", Args: json.RawMessage(`{}`), By: episode.Agent, Turn: i,
			Result: &episode.Result{CallIndex: i, Text: "x"}}
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, Call: c}, episode.Event{Type: episode.EventResult, Result: c.Result})
		ep.Turns = append(ep.Turns, episode.Turn{Index: i, Calls: []int{i}})
	}
	write := func(path string, lines ...any) {
		var b []byte
		for _, l := range lines {
			j, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, j...), '\n')
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := 0.15
	write(filepath.Join(dir, "s1"+mcplog.GuardsSuffix),
		mcplog.GuardsCheck{Type: mcplog.TypeCheck, ID: json.RawMessage("5"), Tool: "cancel_pending_order",
			Verdicts: []mcplog.GuardVerdict{{Rule: "retail.cancel_reason", Verdict: "refuse", Reason: "'found it cheaper' is not an accepted reason", Enforced: true}},
			Refused:  "retail.cancel_reason"},
		mcplog.GuardsCheck{Type: mcplog.TypeCheck, ID: json.RawMessage("6"), Tool: "cancel_pending_order",
			Verdicts: []mcplog.GuardVerdict{{Rule: "retail.cancel_reason", Verdict: "allow", Enforced: true}}},
		mcplog.GuardsLimit{Type: mcplog.TypeLimit, ID: json.RawMessage("7"), Tool: "cancel_pending_order",
			Limit: "--limit cancel_pending_order=1/h", Frees: "2026-03-01T01:00:00.000Z", Refusal: "Refused by hoist-mcp's limit"})
	write(filepath.Join(dir, "s1"+mcplog.ConfirmSuffix),
		mcplog.ConfirmJudgment{Type: mcplog.TypeJudgment, ID: json.RawMessage("6"), Tool: "cancel_pending_order",
			Answers: []mcplog.ConfirmAnswer{{Question: "confirm", Answered: true, PYes: &p}}, Failed: true, Enforced: true})

	m := &memSource{rows: []store.Session{sessionRow(ep, 0, &store.Flow{})}, eps: map[string]*episode.Episode{"s1": ep},
		logs: map[string][]string{"s1": {logPath}}}
	s, err := New(Options{Source: m})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/session?id=s1", nil))
	body := w.Body.String()
	for _, want := range []string{
		"<td>#0</td><td>guard retail.cancel_reason</td><td>refuse (enforced)</td><td>&#39;found it cheaper&#39; is not an accepted reason</td>",
		"<td>#1</td><td>guards</td><td>allow</td>",
		"<td>#1</td><td>judge</td><td>refused</td><td>confirm: p_yes 0.15</td>",
		"<td>#2</td><td>limit</td><td>refused</td><td>--limit cancel_pending_order=1/h: cancel_pending_order was not sent; it frees at 2026-03-01T01:00:00.000Z</td>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the session page lacks %q", want)
		}
	}
	// Read from a store, the same session shows none: the logs beside it
	// are not the store's.
	m.logs = nil
	w = httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/session?id=s1", nil))
	if strings.Contains(w.Body.String(), "<td>judge</td>") {
		t.Error("a session without logs shows judge lines")
	}
}
