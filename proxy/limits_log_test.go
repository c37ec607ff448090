package proxy_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A limit's refusals in the guards log (issue 29, point 3;
// docs/limits.md, "Where the refusals are logged"): beside the guards'
// verdicts, one line per call a limit refused, naming the limit and when
// it frees, read by the test from the file the built hoist-mcp wrote.

// limitLine is what the tests read of a guards log's line, a check or a
// limit.
type limitLine struct {
	Type      string          `json:"type"`
	ID        json.RawMessage `json:"id"`
	Commit    json.RawMessage `json:"commit"`
	Tool      string          `json:"tool"`
	Refused   string          `json:"refused"`
	Limit     string          `json:"limit"`
	Frees     string          `json:"frees"`
	Refusal   string          `json:"refusal"`
	Arguments json.RawMessage `json:"arguments"`
}

// guardsLogOf reads the one guards log in dir.
func guardsLogOf(t *testing.T, dir string) []limitLine {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.guards.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("guards logs in %s: %v", dir, logs)
	}
	return readJSONL[limitLine](t, logs[0])
}

// TestLimitsInGuardsLog: with --guards, a call a limit refuses is a line
// of the guards log between the checks of the writes, in the order the
// agent made them, with the limit, when it frees and the agent's text;
// the budget's refusal frees never; a hoist_commit step a limit refuses
// names its commit.
func TestLimitsInGuardsLog(t *testing.T) {
	dir := t.TempDir()
	p, journal, _, _ := openShop(t, nil, "--record", dir, "--domain", "retail", "--guards", "--commit",
		"--limit", "find_user_id_by_email=1/h", "--max-calls", "3")
	do := func(line string) result { p.send(line); return readResult(t, p.readLine()) }
	do(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	if r := do(toolCall(4, "cancel_pending_order", `{"order_id":"#W7a","reason":"found it cheaper"}`)); !r.Result.IsError {
		t.Fatalf("the cancel with another reason went on: %s", r.text())
	}
	over := do(toolCall(5, "find_user_id_by_email", `{"email":"c8@example.com"}`))
	if !over.Result.IsError || !strings.Contains(over.text(), "--limit find_user_id_by_email=1/h") {
		t.Fatalf("the second find_user_id_by_email in the hour: %s", over.text())
	}
	do(toolCall(6, "get_order_details", `{"order_id":"#W7a"}`))
	do(toolCall(7, "get_order_details", `{"order_id":"#W7a"}`))
	budget := do(toolCall(8, "get_order_details", `{"order_id":"#W7a"}`))
	if !budget.Result.IsError || !strings.Contains(budget.text(), "--max-calls 3") {
		t.Fatalf("the fourth call of the session: %s", budget.text())
	}
	commit := do(commitCall(9, inner("get_order_details", `{"order_id":"#W7a"}`)))
	if steps := commitSteps(t, commit); len(steps) != 1 || steps[0] != "refused get_order_details" {
		t.Fatalf("the commit's steps %v", steps)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if n := len(servedCalls(t, journal)); n != 3 {
		t.Fatalf("the shop served %d calls, want 3", n)
	}

	lines := guardsLogOf(t, dir)
	var kinds []string
	for _, l := range lines {
		kinds = append(kinds, l.Type+" "+string(l.ID)+" "+l.Tool)
	}
	want := []string{
		"check 4 cancel_pending_order", "limit 5 find_user_id_by_email", "limit 8 get_order_details", "limit null get_order_details",
	}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the guards log's lines\n%s\nwant\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	if l := lines[0]; l.Refused != "retail.cancel_reason" {
		t.Errorf("the guards' check: %+v", l)
	}
	l := lines[1]
	if l.Limit != "--limit find_user_id_by_email=1/h" || l.Refusal != over.text() || l.Arguments != nil {
		t.Errorf("the limit's line: %+v", l)
	}
	frees, err := time.Parse(time.RFC3339Nano, l.Frees)
	if err != nil || !strings.Contains(over.text(), "at "+l.Frees) || frees.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("the limit's line frees %q (%v), the agent was told %q", l.Frees, err, over.text())
	}
	if l := lines[2]; l.Limit != "--max-calls 3" || l.Frees != "" || l.Refusal != budget.text() {
		t.Errorf("the budget's line: %+v", l)
	}
	if l := lines[3]; string(l.Commit) != "9" || l.Limit != "--max-calls 3" {
		t.Errorf("the commit step's line: %+v", l)
	}
}

// TestLimitsLogWithoutGuards: limits alone keep a guards log beside the
// session log too, with only their refusals.
func TestLimitsLogWithoutGuards(t *testing.T) {
	dir := t.TempDir()
	p, _, _, _ := openShop(t, nil, "--record", dir, "--limit", "*=1/h")
	p.send(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	p.readLine()
	p.send(toolCall(4, "get_order_details", `{"order_id":"#W7a"}`))
	if r := readResult(t, p.readLine()); !r.Result.IsError {
		t.Fatalf("the second call in the hour: %s", r.text())
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	lines := guardsLogOf(t, dir)
	if len(lines) != 1 || lines[0].Type != "limit" || string(lines[0].ID) != "4" || lines[0].Limit != "--limit *=1/h" {
		t.Errorf("the guards log: %+v", lines)
	}
}
