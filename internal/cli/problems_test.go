package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// eightTurns writes a session log of eight LLM turns (a call each, three
// seconds apart) into dir and returns its path and its lines.
func eightTurns(t *testing.T, dir string) (string, []string) {
	t.Helper()
	lines := []string{`{"hoist_mcp_log":2,"session":"20260923T230000.000Z-7","started_unix_ms":1790204400000,"server_command":["demo"],"domain":"demo","agent_model":"gpt-4.1","host_session":"hs-8"}`,
		`{"t_ms":0,"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"1"}}}}`,
		`{"t_ms":1,"from":"server","message":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"demo","version":"1"}}}}`}
	for i := range 8 {
		ms := 1000 + 3000*i
		lines = append(lines,
			fmt.Sprintf(`{"t_ms":%d,"from":"client","message":{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"t%d"}}}}`, ms, i+1, i),
			fmt.Sprintf(`{"t_ms":%d,"from":"server","message":{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"r%d"}],"isError":false}}}`, ms+5, i+1, i))
	}
	path := filepath.Join(dir, "20260923T230000.000Z-7.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, lines
}

type shownCall struct {
	Type       string `json:"type"`
	Turn       *int   `json:"turn"`
	Cancelled  bool   `json:"cancelled"`
	Unanswered bool   `json:"unanswered"`
	Unreadable bool   `json:"unreadable"`
}

// TestBadLineCostsThatLine: a result line damaged in the middle of a log
// (as a user did by hand) is named with its file and line, ingest exits 3,
// and the session keeps its eight LLM turns: the call it answered is
// answered and unreadable, not cancelled holding every later call in its
// turn. The store keeps the problem: a later ingest, quiet on the lines it
// named before, says how many sessions have bad lines, and hoist sessions
// --problems lists them.
func TestBadLineCostsThatLine(t *testing.T) {
	dir := t.TempDir()
	path, lines := eightTurns(t, dir)
	lines[8] = `{"t_ms":7005,"from":"server","message": {broken` // the answer to call 3, line 9
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)

	r := run(t, nil, "ingest", "--sessions", dir)
	if r.code != 3 || !strings.Contains(r.stderr, path+":9: not a JSON line (line skipped; the rest of the log is ingested)") {
		t.Fatalf("exit %d, want 3 and the line named:\n%s", r.code, r.stderr)
	}
	got := sessions(t, "--store", filepath.Join(dir, "hoist.db"))
	if len(got) != 1 || got[0].Turns != 8 || got[0].Calls != 8 {
		t.Fatalf("sessions: %+v; want one of 8 LLM turns and 8 calls", got)
	}
	show := mustRun(t, "sessions", "show", got[0].ID, "--store", filepath.Join(dir, "hoist.db"), "--json")
	var shown struct {
		BadLines int         `json:"bad_lines"`
		Events   []shownCall `json:"events"`
	}
	if err := json.Unmarshal([]byte(show.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	var calls []shownCall
	for _, e := range shown.Events {
		if e.Type == "call" {
			calls = append(calls, e)
		}
	}
	for i, c := range calls {
		if want := i == 2; c.Unreadable != want || c.Cancelled || c.Unanswered || *c.Turn != i {
			t.Errorf("call %d: %+v; want turn %d, unreadable %v, never cancelled", i, c, i, want)
		}
	}
	if shown.BadLines != 1 {
		t.Errorf("bad_lines %d, want 1", shown.BadLines)
	}
	text := mustRun(t, "sessions", "show", got[0].ID, "--store", filepath.Join(dir, "hoist.db"))
	if !strings.Contains(text.stdout, "its answer's log line is unreadable") {
		t.Errorf("sessions show does not say the answer is unreadable:\n%s", text.stdout)
	}

	// Later commands say it once, without naming every line again.
	r = run(t, nil, "ingest", "--sessions", dir)
	if r.code != 0 || strings.Contains(r.stderr, ":9:") || !strings.Contains(r.stderr, "hoist: 1 session has bad lines (hoist sessions --problems)") {
		t.Errorf("re-ingest: exit %d\n%s", r.code, r.stderr)
	}
	r = run(t, nil, "sessions", "--store", filepath.Join(dir, "hoist.db"))
	if r.code != 0 || !strings.Contains(r.stderr, "1 session has bad lines") {
		t.Errorf("sessions: exit %d\n%s", r.code, r.stderr)
	}
	r = mustRun(t, "sessions", "--store", filepath.Join(dir, "hoist.db"), "--problems")
	if want := "SESSION\tFILE:LINE\tFIELD\tPROBLEM\n" + got[0].ID + "\t" + path + ":9\t-\tnot a JSON line\n"; r.stdout != want || strings.Contains(r.stderr, "bad lines") {
		t.Errorf("--problems:\n%q\nwant\n%q (stderr %q)", r.stdout, want, r.stderr)
	}
}

// TestMalformedInputNamed: a header without the members every log has is
// named by file, line and member; every file that is not a session log is
// named once, counted, and not named again while it does not change; a
// torn last line is counted; the summary's plurals are right; a run that
// skipped anything exits 3.
func TestMalformedInputNamed(t *testing.T) {
	dir := t.TempDir()
	eightTurns(t, dir)
	files := map[string]string{
		"header-only.jsonl": `{"hoist_mcp_log":2}` + "\n",
		"random.bin":        "\x8f\x01\xffgarbage\x00",
		"notes.txt":         "remember the milk\n",
		"empty.jsonl":       "",
		"other.jsonl":       `{"role":"user","content":"hi"}` + "\n",
	}
	for name, data := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600)
	}
	r := run(t, nil, "ingest", "--sessions", dir)
	if r.code != 3 {
		t.Errorf("exit %d, want 3", r.code)
	}
	for _, want := range []string{
		filepath.Join(dir, "header-only.jsonl") + ":1: session: missing",
		filepath.Join(dir, "random.bin") + ": skipped: not a session log",
		filepath.Join(dir, "notes.txt") + ": skipped: not a session log",
		filepath.Join(dir, "empty.jsonl") + ": skipped: not a hoist-mcp session log",
		filepath.Join(dir, "other.jsonl") + ": skipped: not a hoist-mcp session log",
		"hoist: 1 session written from 1 file read (0 unchanged, 4 files are not session logs, 1 file could not be read)",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if got := sessions(t, "--store", filepath.Join(dir, "hoist.db")); len(got) != 1 {
		t.Errorf("%d sessions, want 1 (no session of an empty id from 1970)", len(got))
	}

	// Once named, unchanged files are counted, not named again.
	os.Remove(filepath.Join(dir, "header-only.jsonl"))
	r = run(t, nil, "ingest", "--sessions", dir)
	if r.code != 0 || strings.Contains(r.stderr, "skipped") || !strings.Contains(r.stderr, "nothing new to ingest: 1 file unchanged (4 files are not session logs)") {
		t.Errorf("second ingest: exit %d\n%s", r.code, r.stderr)
	}

	// A log the proxy is still writing: its torn last line is counted.
	path, lines := eightTurns(t, t.TempDir())
	torn := t.TempDir()
	os.WriteFile(filepath.Join(torn, filepath.Base(path)), []byte(strings.Join(lines, "\n")+"\n"+`{"t_ms":30000,"from":"cli`), 0o600)
	r = run(t, nil, "ingest", "--sessions", torn)
	if r.code != 0 || !strings.Contains(r.stderr, "1 log ended mid-line: the proxy may still be writing it") {
		t.Errorf("torn log: exit %d\n%s", r.code, r.stderr)
	}
}

// TestAgentModelIsTheModel: agent_model is the header's (the model that
// drove the agent), and the MCP client's name has a column of its own.
func TestAgentModelIsTheModel(t *testing.T) {
	dir := t.TempDir()
	eightTurns(t, dir)
	mustRun(t, "ingest", "--sessions", dir)
	r := mustRun(t, "sessions", "--json", "--store", filepath.Join(dir, "hoist.db"))
	var got []struct {
		AgentModel string `json:"agent_model"`
		ClientName string `json:"client_name"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 {
		t.Fatalf("%v %s", err, r.stdout)
	}
	if got[0].AgentModel != "gpt-4.1" || got[0].ClientName != "claude-code" {
		t.Errorf("agent_model %q, client_name %q; want gpt-4.1 (the header's) and claude-code (initialize's)", got[0].AgentModel, got[0].ClientName)
	}
}

// TestLearnNeedsDomainWhenSeveral: learn without --domain over a store of
// several domains refuses, naming the domains and their sessions, rather
// than mixing them into one flow of domain "(none)"; with one domain it
// needs no --domain.
func TestLearnNeedsDomainWhenSeveral(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, "sessions/support", filepath.Join(dir, "support"))
	copyTestdata(t, "sessions/flow", filepath.Join(dir, "flow"))
	store := filepath.Join(t.TempDir(), "hoist.db")
	mustRun(t, "ingest", "--sessions", dir, "--store", store)
	out := filepath.Join(t.TempDir(), "f.json")
	r := run(t, nil, "learn", "--store", store, "--out", out)
	if r.code != 2 || !strings.Contains(r.stderr, "the store holds sessions of 2 domains: demo (2 sessions), support (2 sessions); choose one with --domain") {
		t.Errorf("exit %d, want 2 and the domains named:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a flow was written")
	}
	one := filepath.Join(t.TempDir(), "hoist.db")
	mustRun(t, "ingest", "--sessions", filepath.Join(dir, "flow"), "--store", one)
	if r := run(t, nil, "learn", "--store", one, "--out", out); r.code != 0 {
		t.Errorf("one domain: exit %d\n%s", r.code, r.stderr)
	}
}

// TestFlowOffRecorded: a flow served under another server name than it
// was learned with looks nothing up, and says so where the user will look
// later: in its flow log, and so in hoist sessions show.
func TestFlowOffRecorded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	flowFile := filepath.Join(testbin.Root(), "proxy", "testdata", "demo.flow.json")
	p := startProxy(t, dir, "fs", "e2e-off", "--domain", "demo", "--flow", flowFile)
	p.start(t)
	p.request(t, 2, "tools/call", `{"name":"lookup","arguments":{"text":"a","next":"b"}}`)
	p.close(t)
	mustRun(t, "ingest", "--sessions", dir)
	all := sessions(t, "--sessions", dir)
	if len(all) != 1 {
		t.Fatalf("sessions: %+v", all)
	}
	show := mustRun(t, "sessions", "show", all[0].ID, "--sessions", dir).stdout
	if !strings.Contains(show, "flow:          served nothing:") || !strings.Contains(show, "add --server-name hoist-mcp-demo") {
		t.Errorf("sessions show does not say the flow served nothing, and why:\n%s", show)
	}
}
