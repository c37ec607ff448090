package cli_test

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	// The test plays a newer hoist by writing the store's schema table
	// itself; hoist's own code reaches SQLite only through store.
	_ "github.com/mattn/go-sqlite3"

	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/migrations"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := run(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("hoist %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// copyTestdata copies testdata/<src> of the module into dst.
func copyTestdata(t *testing.T, src, dst string) {
	t.Helper()
	from := filepath.Join(testbin.Root(), "testdata", src)
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

type session struct {
	ID          string   `json:"id"`
	Domain      string   `json:"domain"`
	HostSession string   `json:"host_session"`
	Servers     []string `json:"servers"`
	Turns       int      `json:"llm_turns"`
	Calls       int      `json:"calls"`
	Messages    int      `json:"messages"`
	Errors      int      `json:"errors"`
	Runs        int      `json:"runs"`
	Decisions   int      `json:"decisions"`
}

func sessions(t *testing.T, args ...string) []session {
	t.Helper()
	r := mustRun(t, append([]string{"sessions", "--json"}, args...)...)
	var out []session
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, r.stdout)
	}
	return out
}

func TestIngestSessionsExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	copyTestdata(t, "tau2/logs", filepath.Join(dir, "tau2"))
	copyTestdata(t, "sessions/support", filepath.Join(dir, "support"))
	copyTestdata(t, "sessions/flow", filepath.Join(dir, "flow"))

	r := mustRun(t, "ingest", "--sessions", dir)
	if !strings.Contains(r.stderr, "9 sessions written from 10 files read") || !strings.Contains(r.stderr, "2 flow logs: 8 runs, 14 decisions") {
		t.Errorf("first ingest said:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "hoist.db")); err != nil {
		t.Errorf("the default store is not beside the logs: %v", err)
	}
	before := sessions(t, "--sessions", dir)
	if len(before) != 9 {
		t.Fatalf("sessions: %d, want 9", len(before))
	}

	t.Run("re-ingest is a no-op", func(t *testing.T) {
		r := mustRun(t, "ingest", "--sessions", dir)
		if !strings.Contains(r.stderr, "nothing new to ingest: 10 files unchanged") {
			t.Errorf("second ingest said:\n%s", r.stderr)
		}
		if diff := cmp.Diff(before, sessions(t, "--store", filepath.Join(dir, "hoist.db"))); diff != "" {
			t.Errorf("sessions changed:\n%s", diff)
		}
		if r := mustRun(t, "ingest", "--sessions", dir, "--quiet"); r.stderr != "" {
			t.Errorf("--quiet printed %q", r.stderr)
		}
	})

	t.Run("filters and plain output", func(t *testing.T) {
		if got := sessions(t, "--sessions", dir, "--domain", "retail"); len(got) != 2 {
			t.Errorf("--domain retail: %d sessions", len(got))
		}
		if got := sessions(t, "--sessions", dir, "--host-session", "hs-1"); len(got) != 1 || len(got[0].Servers) != 2 {
			t.Errorf("--host-session hs-1: %+v", got)
		}
		if got := sessions(t, "--sessions", dir, "--since", "2025-12-01", "--until", "2025-12-02"); len(got) != 2 {
			t.Errorf("--since/--until: %+v", got)
		}
		r := mustRun(t, "sessions", "--sessions", dir)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 10 || !strings.HasPrefix(lines[0], "ID\tDOMAIN\t") || strings.Count(lines[0], "\t") != 10 || strings.Count(lines[1], "\t") != 10 {
			t.Errorf("piped list is not a header line and one tab-separated line per session:\n%s", r.stdout)
		}
	})

	t.Run("show", func(t *testing.T) {
		var id string
		for _, s := range before {
			if s.HostSession == "hs-1" {
				id = s.ID
			}
		}
		r := mustRun(t, "sessions", "show", id, "--sessions", dir, "--json")
		var shown struct {
			Tools  []struct{ Name, Kind string } `json:"tools"`
			Events []json.RawMessage             `json:"events"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
			t.Fatal(err)
		}
		if len(shown.Tools) != 3 || shown.Tools[0].Name != "tickets::get_ticket" || shown.Tools[0].Kind != "read" {
			t.Errorf("tools: %+v", shown.Tools)
		}
		text := mustRun(t, "sessions", "show", id, "--sessions", dir).stdout
		for _, want := range []string{"LLM turn 0", "tickets::get_ticket", "docs::search", "never answered"} {
			if !strings.Contains(text, want) {
				t.Errorf("show lacks %q:\n%s", want, text)
			}
		}
		for _, s := range before {
			if s.HostSession == "flow-shadow" {
				text := mustRun(t, "sessions", "show", s.ID, "--sessions", dir).stdout
				if s.Runs != 4 || s.Decisions != 7 || !strings.Contains(text, "flow log:      4 runs, 7 decisions") {
					t.Errorf("the shadow session: %+v\n%s", s, text)
				}
			}
		}
		if r := run(t, nil, "sessions", "show", "no-such-session", "--sessions", dir); r.code != 1 || !strings.Contains(r.stderr, "no session") {
			t.Errorf("show of an unknown id: %+v", r)
		}
	})

	t.Run("parquet read back by DuckDB", func(t *testing.T) {
		peers := testbin.Peers(t)
		out := filepath.Join(t.TempDir(), "export")
		mustRun(t, "export", "--sessions", dir, "--format", "parquet", "--out", out)
		cmd := exec.Command("node", filepath.Join(testbin.Root(), "internal", "cli", "testdata", "duckdb_check.js"), peers, out)
		b, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("duckdb_check.js: %v\n%s", err, stderr)
		}
		got := readBack(t, b)
		want := map[string]int{"sessions": len(before)}
		wantJoin, wantRuns := map[string]int{}, map[string]int{}
		for _, s := range before {
			want["turns"] += s.Turns
			want["calls"] += s.Calls
			want["messages"] += s.Messages
			want["runs"] += s.Runs
			want["decisions"] += s.Decisions
			wantJoin[s.Domain] += s.Calls
			if s.Runs > 0 {
				wantRuns[s.Domain] += s.Runs
			}
		}
		if diff := cmp.Diff(want, got.Rows); diff != "" {
			t.Errorf("row counts (-store +duckdb):\n%s", diff)
		}
		if diff := cmp.Diff(wantJoin, got.CallsByDomain); diff != "" {
			t.Errorf("calls joined to sessions by domain (-store +duckdb):\n%s", diff)
		}
		if diff := cmp.Diff(wantRuns, got.RunsByDomain); diff != "" {
			t.Errorf("runs joined to sessions by domain (-store +duckdb):\n%s", diff)
		}
		if got.DecisionsInRuns != want["decisions"] || got.LookupsTaken != 6 {
			t.Errorf("decisions joined to their runs: %d of %d; lookups taken: %d, want 6", got.DecisionsInRuns, want["decisions"], got.LookupsTaken)
		}
		if got.Types["called_at"] != "TIMESTAMP WITH TIME ZONE" || got.Types["call_index"] != "INTEGER" || got.Types["is_error"] != "BOOLEAN" {
			t.Errorf("column types: %v", got.Types)
		}
		checkFlowTypes(t, got.Types)
		if diff := cmp.Diff([]string{strconv.Itoa(migrations.Latest())}, got.SchemaVersions); diff != "" {
			t.Errorf("schema versions: %s", diff)
		}
	})

	t.Run("an export among the logs is not read as logs", func(t *testing.T) {
		mustRun(t, "export", "--sessions", dir, "--format", "jsonl", "--out", filepath.Join(dir, "export"))
		r := mustRun(t, "ingest", "--sessions", dir)
		if !strings.Contains(r.stderr, "nothing new to ingest: 10 files unchanged") {
			t.Errorf("ingest after an export into the logs said:\n%s", r.stderr)
		}
	})

	t.Run("arrow and jsonl", func(t *testing.T) {
		for _, f := range []string{"arrow", "jsonl"} {
			out := filepath.Join(t.TempDir(), f)
			mustRun(t, "export", "--store", filepath.Join(dir, "hoist.db"), "--format", f, "--out", out)
			matches, _ := filepath.Glob(filepath.Join(out, "calls", "domain=*", "date=*", "part-0."+f))
			if len(matches) == 0 {
				t.Errorf("%s: no calls files", f)
			}
		}
	})
}

// duckdbReadBack is what testdata/duckdb_check.js prints.
type duckdbReadBack struct {
	Rows            map[string]int    `json:"rows"`
	CallsByDomain   map[string]int    `json:"calls_by_domain"`
	RunsByDomain    map[string]int    `json:"runs_by_domain"`
	DecisionsInRuns int               `json:"decisions_in_runs"`
	LookupsTaken    int               `json:"lookups_taken"`
	Types           map[string]string `json:"types"`
	SchemaVersions  []string          `json:"schema_versions"`
}

func readBack(t *testing.T, b []byte) duckdbReadBack {
	t.Helper()
	var got duckdbReadBack
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return got
}

// duckdbCheck reads the Parquet export out back with DuckDB.
func duckdbCheck(t *testing.T, out string) duckdbReadBack {
	t.Helper()
	peers := testbin.Peers(t)
	cmd := exec.Command("node", filepath.Join(testbin.Root(), "internal", "cli", "testdata", "duckdb_check.js"), peers, out)
	b, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("duckdb_check.js: %v\n%s", err, stderr)
	}
	return readBack(t, b)
}

func checkFlowTypes(t *testing.T, types map[string]string) {
	t.Helper()
	for col, want := range map[string]string{
		"decisions.run_index": "INTEGER", "decisions.propensity": "DOUBLE", "decisions.offer_count": "BIGINT",
		"decisions.shadow": "BOOLEAN", "decisions.taken_args": "VARCHAR", "runs.surprise": "DOUBLE", "runs.logp_policy": "DOUBLE",
		"runs.failed": "BOOLEAN", "runs.lookups": "BIGINT",
	} {
		if types[col] != want {
			t.Errorf("column %s: %q, want %s", col, types[col], want)
		}
	}
}

func TestBadInputExit3(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, "sessions/bad", dir)
	r := run(t, nil, "ingest", "--sessions", dir)
	if r.code != 3 {
		t.Errorf("exit %d, want 3\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		filepath.Join(dir, "20260923T220000.000Z-201.jsonl") + ":5: t_ms:",
		filepath.Join(dir, "notes.jsonl") + ": skipped: not a hoist-mcp session log",
		"1 session written",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if got := sessions(t, "--store", filepath.Join(dir, "hoist.db")); len(got) != 1 || got[0].Calls != 3 {
		t.Errorf("sessions: %+v", got)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"ingest"},
		{"ingest", "--tools", "x.json", "--sessions", "."},
		{"ingest", "--tau2", "r.json"},
		{"sessions"},
		{"sessions", "--store", "x.db", "--since", "yesterday"},
		{"export", "--store", "x.db", "--format", "csv", "--out", "o"},
		{"export", "--store", "x.db", "--format", "parquet"},
		{"sessions", "show", "--store", "x.db"},
	} {
		if r := run(t, nil, args...); r.code != 2 {
			t.Errorf("hoist %s: exit %d, want 2\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	for _, cmd := range []string{"ingest", "sessions", "export"} {
		r := mustRun(t, cmd, "--help")
		for _, want := range []string{"Exit codes:", "--store", "hoist.db"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("hoist %s --help lacks %q", cmd, want)
			}
		}
	}
}

func TestNewerStoreRefused(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, "sessions/support", dir)
	mustRun(t, "ingest", "--sessions", dir)
	db, err := sql.Open("sqlite3", filepath.Join(dir, "hoist.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO schema_migrations (version, name, applied_unix_ms) VALUES (999, '0999_future.sql', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := run(t, nil, "sessions", "--sessions", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "was written by a newer hoist (schema version 999") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestConcurrentIngestProcesses(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, "tau2/logs", dir)
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = run(t, nil, "ingest", "--sessions", dir, "--quiet")
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("ingest %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	if got := sessions(t, "--sessions", dir); len(got) != 5 {
		t.Errorf("sessions after concurrent ingests: %d, want 5", len(got))
	}
}

// proxy is a real hoist-mcp recording in front of hoist-mcp-demo, driven
// with JSON-RPC lines on its stdin.
type proxy struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startProxy(t *testing.T, dir, name, hostSession string, flags ...string) *proxy {
	t.Helper()
	args := append([]string{"--record", dir, "--server-name", name}, flags...)
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), append(args, "--", testbin.Build(t, "hoist-mcp-demo"))...)
	cmd.Env = testbin.Env("HOIST_SESSION=" + hostSession)
	return attach(t, cmd)
}

// attach starts a proxy's command and reads its output lines.
func attach(t *testing.T, cmd *exec.Cmd) *proxy {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proxy{cmd: cmd, in: in, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}

// request sends one request and waits for its response.
func (p *proxy) request(t *testing.T, id int, method, params string) string {
	t.Helper()
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, id, method)
	if params != "" {
		line += `,"params":` + params
	}
	if _, err := io.WriteString(p.in, line+"}\n"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("proxy closed its output before answering %d", id)
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal([]byte(l), &m) == nil && string(m.ID) == fmt.Sprint(id) {
				return l
			}
		case <-timeout:
			t.Fatalf("no answer to %d", id)
		}
	}
}

func (p *proxy) start(t *testing.T) {
	t.Helper()
	p.request(t, 0, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}`)
	io.WriteString(p.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	p.request(t, 1, "tools/list", "")
}

func (p *proxy) close(t *testing.T) {
	t.Helper()
	p.in.Close()
	for range p.lines {
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("proxy: %v", err)
	}
}

func TestTwoProxiesOneHostSession(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	tickets := startProxy(t, dir, "tickets", "e2e-host")
	tickets.start(t) // answered: the tickets log has started, first
	docs := startProxy(t, dir, "docs", "e2e-host")
	docs.start(t)
	tickets.request(t, 2, "tools/call", `{"name":"lookup","arguments":{"text":"T-7"}}`)
	// The sleeps are the agent's thinking between LLM turns, which the
	// 500 ms rule of turn inference reads; the responses synchronise.
	time.Sleep(700 * time.Millisecond)
	docs.request(t, 2, "tools/call", `{"name":"lookup","arguments":{"text":"login errors"}}`)
	time.Sleep(700 * time.Millisecond)
	tickets.request(t, 3, "tools/call", `{"name":"update","arguments":{"text":"close T-7","fail":true}}`)
	tickets.close(t)
	docs.close(t)

	// A later session of one server, in another host session.
	solo := startProxy(t, dir, "orders", "e2e-other")
	solo.start(t)
	solo.request(t, 2, "tools/call", `{"name":"lookup","arguments":{"text":"#1"}}`)
	solo.close(t)

	mustRun(t, "ingest", "--sessions", dir)
	all := sessions(t, "--sessions", dir)
	if len(all) != 2 {
		t.Fatalf("sessions: %+v, want the two proxies' logs merged into one and the solo one", all)
	}
	got := sessions(t, "--sessions", dir, "--host-session", "e2e-host")
	if len(got) != 1 {
		t.Fatalf("host session e2e-host: %+v", got)
	}
	s := got[0]
	if diff := cmp.Diff([]string{"tickets", "docs"}, s.Servers); diff != "" {
		t.Errorf("servers: %s", diff)
	}
	if s.Calls != 3 || s.Errors != 1 || s.Turns != 3 {
		t.Errorf("merged session: %+v", s)
	}
	r := mustRun(t, "sessions", "show", s.ID, "--sessions", dir, "--json")
	var shown struct {
		Events []struct {
			Type string `json:"type"`
			Tool string `json:"tool_name"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, e := range shown.Events {
		if e.Type == "call" {
			calls = append(calls, e.Tool)
		}
	}
	if diff := cmp.Diff([]string{"tickets::lookup", "docs::lookup", "tickets::update"}, calls); diff != "" {
		t.Errorf("calls in the order the proxies read them: %s", diff)
	}
	other := sessions(t, "--sessions", dir, "--host-session", "e2e-other")
	r = mustRun(t, "sessions", "show", other[0].ID, "--sessions", dir)
	if !strings.Contains(r.stdout, "orders::lookup") {
		t.Errorf("the solo session's tools are not named after their server in a directory of several servers:\n%s", r.stdout)
	}
}

func TestMissingStoreNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.db")
	r := run(t, nil, "sessions", "--store", path)
	if r.code != 1 || !strings.Contains(r.stderr, "no store at "+path) {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("reading a missing store created it")
	}
	dir := filepath.Join(t.TempDir(), "no-such-logs")
	for _, cmd := range []string{"ingest", "sessions"} {
		if r := run(t, nil, cmd, "--sessions", dir); r.code != 1 || !strings.Contains(r.stderr, "no such directory") {
			t.Errorf("%s --sessions of a missing directory: exit %d\n%s", cmd, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a missing --sessions directory was created")
	}
}

// A flow log hoist-mcp --flow writes as it serves a flow is ingested with
// its session, counted by sessions show, exported as the decisions and
// runs datasets, and read back by DuckDB.
func TestFlowLogRecordedIngestedExported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	flowFile := filepath.Join(testbin.Root(), "proxy", "testdata", "demo.flow.json")
	p := startProxy(t, dir, "hoist-mcp-demo", "e2e-flow", "--domain", "demo", "--flow", flowFile, "--flow-explore", "0.5")
	p.start(t)
	p.request(t, 2, "tools/call", `{"name":"lookup","arguments":{"text":"a","next":"b"}}`)
	p.request(t, 3, "tools/call", `{"name":"update","arguments":{"text":"w"}}`)
	p.request(t, 4, "tools/call", `{"name":"lookup","arguments":{"text":"c","next":"d"}}`)
	p.close(t)

	logs, _ := filepath.Glob(filepath.Join(dir, "*.flow.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("flow logs: %v", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	var wantRuns, wantDecisions int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch {
		case strings.HasPrefix(l, `{"type":"run"`):
			wantRuns++
		case strings.HasPrefix(l, `{"type":"decision"`):
			wantDecisions++
		}
	}
	if wantRuns < 3 || wantDecisions <= wantRuns {
		t.Fatalf("flow log: %d runs, %d decisions\n%s", wantRuns, wantDecisions, b)
	}

	r := mustRun(t, "ingest", "--sessions", dir)
	if want := fmt.Sprintf("1 flow log: %d runs, %d decisions", wantRuns, wantDecisions); !strings.Contains(r.stderr, want) {
		t.Errorf("ingest said:\n%s\nwant %q", r.stderr, want)
	}
	all := sessions(t, "--sessions", dir)
	if len(all) != 1 || all[0].Runs != wantRuns || all[0].Decisions != wantDecisions {
		t.Fatalf("sessions: %+v", all)
	}
	show := mustRun(t, "sessions", "show", all[0].ID, "--sessions", dir).stdout
	if !strings.Contains(show, fmt.Sprintf("flow log:      %d runs, %d decisions", wantRuns, wantDecisions)) {
		t.Errorf("show:\n%s", show)
	}

	out := filepath.Join(t.TempDir(), "export")
	r = mustRun(t, "export", "--sessions", dir, "--format", "parquet", "--out", out)
	if !strings.Contains(r.stderr, fmt.Sprintf("decisions %d, runs %d", wantDecisions, wantRuns)) {
		t.Errorf("export said:\n%s", r.stderr)
	}
	got := duckdbCheck(t, out)
	want := map[string]int{"sessions": 1, "turns": all[0].Turns, "calls": all[0].Calls, "messages": 0, "runs": wantRuns, "decisions": wantDecisions}
	if diff := cmp.Diff(want, got.Rows); diff != "" {
		t.Errorf("row counts (-store +duckdb):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"demo": wantRuns}, got.RunsByDomain); diff != "" {
		t.Errorf("runs joined to sessions (-store +duckdb):\n%s", diff)
	}
	if got.DecisionsInRuns != wantDecisions || got.LookupsTaken == 0 {
		t.Errorf("decisions joined to their runs: %d of %d; lookups taken: %d", got.DecisionsInRuns, wantDecisions, got.LookupsTaken)
	}
	checkFlowTypes(t, got.Types)

	// The flow log grows (the proxy of a session that goes on): the next
	// ingest reads it again; then nothing is new.
	f, err := os.OpenFile(logs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":-1,"propensity":1,"rule":{"decider":"reach","threshold":0.3,"epsilon":0.5}}`)
	fmt.Fprintln(f, `{"type":"run","call":"update","failed":false,"max_lookups":8,"fold":-1,"rule":{"decider":"reach","threshold":0.3,"epsilon":0.5},"sites":[["decide#0","stop",0]],"surprise":0}`)
	fmt.Fprintln(f, `{"type":"run","call":"update","sites":"not sites"}`)
	f.Close()
	r = run(t, nil, "ingest", "--sessions", dir)
	if r.code != 3 || !strings.Contains(r.stderr, logs[0]+fmt.Sprintf(":%d: sites:", wantRuns+wantDecisions+3)) {
		t.Errorf("ingest of the grown flow log: exit %d\n%s", r.code, r.stderr)
	}
	if s := sessions(t, "--sessions", dir); s[0].Runs != wantRuns+1 || s[0].Decisions != wantDecisions+1 {
		t.Errorf("after the flow log grew: %+v", s[0])
	}
	if r := mustRun(t, "ingest", "--sessions", dir); !strings.Contains(r.stderr, "nothing new to ingest: 1 file unchanged") {
		t.Errorf("re-ingest said:\n%s", r.stderr)
	}

	// A flow log without its session log is named and skipped.
	orphan := filepath.Join(dir, "20200101T000000.000Z-1.flow.jsonl")
	if err := os.WriteFile(orphan, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, "ingest", "--sessions", dir); r.code != 3 || !strings.Contains(r.stderr, orphan+": skipped: a flow log without its session log") {
		t.Errorf("ingest with an orphan flow log: exit %d, want 3 (it skipped a file); said:\n%s", r.code, r.stderr)
	}
}
