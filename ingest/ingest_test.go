package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// copyTree copies testdata/<src> into a temporary directory, so tests can
// change the logs; it returns the copy.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	from := filepath.Join("..", "testdata", src)
	to := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func openStore(t testing.TB, path string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, err.Error())
}

func (w *warnings) String() string { return strings.Join(w.msgs, "\n") }

func TestDirTau2LogsAndReingestIsNoop(t *testing.T) {
	dir := copyTree(t, "tau2/logs")
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	var w warnings
	st, err := Dir(ctx, db, dir, Options{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 5 || st.Read != 5 || st.Sessions != 5 || st.Problems() || len(w.msgs) > 0 {
		t.Fatalf("first ingest: %+v, warnings:\n%s", st, w.String())
	}
	before, err := db.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := db.Sessions(ctx, episode.Filter{Domain: "retail"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 2 || sessions[0].Reward == nil || sessions[0].TaskID == "" || sessions[0].Calls == 0 {
		t.Errorf("retail sessions: %+v", sessions)
	}

	st, err = Dir(ctx, db, dir, Options{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 0 || st.Sessions != 0 || st.Unchanged != 5 {
		t.Errorf("re-ingest: %+v, want nothing read", st)
	}
	after, _ := db.Counts(ctx)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("re-ingest changed the store:\n%s", diff)
	}

	// Touched but unchanged: hashed, found equal, not read.
	p := filepath.Join(dir, "retail", "gpt-4.1", "20250801T161636.814Z-22438.jsonl")
	if err := os.Chtimes(p, fixedTime, fixedTime); err != nil {
		t.Fatal(err)
	}
	if st, err = Dir(ctx, db, dir, Options{}); err != nil || st.Read != 0 {
		t.Errorf("ingest after touch: %+v, %v", st, err)
	}
}

func TestGrownLogIsReadAgain(t *testing.T) {
	dir := copyTree(t, "sessions/bad")
	os.Remove(filepath.Join(dir, "notes.jsonl"))
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	if _, err := Dir(ctx, db, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ss, _ := db.Sessions(ctx, episode.Filter{})
	if len(ss) != 1 || ss[0].Calls != 3 {
		t.Fatalf("sessions: %+v", ss)
	}
	f, err := os.OpenFile(filepath.Join(dir, "20260923T220000.000Z-201.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"t_ms":9000,"from":"client","message":{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"d"}}}}`)
	fmt.Fprint(f, `{"t_ms":9001,"from":"server","message":{"jsonrpc":"2.0","id":4,"res`) // torn: the proxy is still writing
	f.Close()
	st, err := Dir(ctx, db, dir, Options{})
	if err != nil || st.Read != 1 || st.Sessions != 1 {
		t.Fatalf("ingest of the grown log: %+v, %v", st, err)
	}
	ss, _ = db.Sessions(ctx, episode.Filter{})
	if len(ss) != 1 || ss[0].Calls != 4 {
		t.Errorf("after growth: %+v", ss)
	}
	ep, _, _ := db.Episode(ctx, ss[0].ID)
	if c := ep.Calls()[3]; c.Result != nil || !c.Cancelled {
		t.Errorf("the call whose answer is torn: %+v", c)
	}
}

func TestMalformedLineAndNotALog(t *testing.T) {
	dir := copyTree(t, "sessions/bad")
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	var w warnings
	st, err := Dir(context.Background(), db, dir, Options{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	if st.NotLogs != 1 || st.Malformed != 1 || st.Sessions != 1 {
		t.Errorf("stats: %+v", st)
	}
	log := filepath.Join(dir, "20260923T220000.000Z-201.jsonl")
	for _, want := range []string{
		filepath.Join(dir, "notes.jsonl") + ": skipped: not a hoist-mcp session log",
		log + ":5: t_ms: ",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("warnings lack %q:\n%s", want, w.String())
		}
	}
	ss, _ := db.Sessions(context.Background(), episode.Filter{})
	if len(ss) != 1 || ss[0].Calls != 3 || ss[0].Errors != 0 {
		t.Fatalf("the rest of the log was not ingested: %+v", ss)
	}
	ep, _, _ := db.Episode(context.Background(), ss[0].ID)
	if r := ep.Calls()[2].Result; r == nil || r.Text != "c" {
		t.Errorf("the call after the malformed line: %+v", ep.Calls()[2])
	}
}

func TestSeveralServersMerge(t *testing.T) {
	dir := copyTree(t, "sessions/support")
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	st, err := Dir(ctx, db, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 2 {
		t.Fatalf("stats: %+v", st)
	}
	ss, _ := db.Sessions(ctx, episode.Filter{HostSession: "hs-1"})
	if len(ss) != 1 {
		t.Fatalf("hs-1 sessions: %+v", ss)
	}
	if diff := cmp.Diff([]string{"tickets", "docs"}, ss[0].Servers); diff != "" {
		t.Errorf("servers: %s", diff)
	}
	ep, _, _ := db.Episode(ctx, ss[0].ID)
	var tools []string
	for _, c := range ep.Calls() {
		tools = append(tools, c.Tool)
	}
	if diff := cmp.Diff([]string{"tickets::get_ticket", "docs::search", "docs::search", "tickets::close_ticket"}, tools); diff != "" {
		t.Errorf("merged calls: %s", diff)
	}
	if c := ep.Calls()[2]; !c.Cancelled {
		t.Errorf("the call the docs log ended without an answer to is not cancelled: %+v", c)
	}
	var msgs int
	for _, ev := range ep.Events {
		if ev.Message != nil {
			msgs++
		}
	}
	if msgs != 1 {
		t.Errorf("the conversation is kept %d times", msgs)
	}
	// The directory holds a session of several servers: the other log's
	// tools are qualified too.
	solo, _ := db.Sessions(ctx, episode.Filter{HostSession: "hs-2"})
	if len(solo) != 1 {
		t.Fatalf("hs-2: %+v", solo)
	}
	ep2, _, _ := db.Episode(ctx, solo[0].ID)
	if c := ep2.Calls()[0]; c.Tool != "orders::refund" || c.Result == nil || !c.Result.IsError {
		t.Errorf("solo call: %+v", c)
	}
}

func TestQualifyingLaterReingestsEarlierLogs(t *testing.T) {
	src := copyTree(t, "sessions/support")
	dir := filepath.Join(t.TempDir(), "logs")
	os.MkdirAll(dir, 0o755)
	move := func(name string) {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	move("20260923T213000.000Z-103.jsonl")
	if _, err := Dir(ctx, db, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ss, _ := db.Sessions(ctx, episode.Filter{})
	ep, _, _ := db.Episode(ctx, ss[0].ID)
	if ep.Calls()[0].Tool != "refund" {
		t.Fatalf("alone in its directory, the tool is %q", ep.Calls()[0].Tool)
	}
	move("20260923T212000.000Z-101.jsonl")
	move("20260923T212000.020Z-102.jsonl")
	if _, err := Dir(ctx, db, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ss, _ = db.Sessions(ctx, episode.Filter{HostSession: "hs-2"})
	ep, _, _ = db.Episode(ctx, ss[0].ID)
	if ep.Calls()[0].Tool != "orders::refund" {
		t.Errorf("after a several-server session arrived, the tool is %q", ep.Calls()[0].Tool)
	}
	if n, _ := db.Sessions(ctx, episode.Filter{}); len(n) != 2 {
		t.Errorf("sessions: %d", len(n))
	}
}

func TestSameServerNameKeptApart(t *testing.T) {
	dir := copyTree(t, "sessions/support")
	p := filepath.Join(dir, "20260923T212000.020Z-102.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `"server_name":"docs"`, `"server_name":"tickets"`, 1)), 0o644)
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	var w warnings
	if _, err := Dir(context.Background(), db, dir, Options{Warn: w.add}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "same name") {
		t.Errorf("no warning about two servers of one name:\n%s", w.String())
	}
	ss, _ := db.Sessions(context.Background(), episode.Filter{HostSession: "hs-1"})
	if len(ss) != 2 {
		t.Errorf("hs-1 sessions: %d, want its two logs kept apart", len(ss))
	}
}

func TestConcurrentIngests(t *testing.T) {
	dir := copyTree(t, "tau2/logs")
	path := filepath.Join(t.TempDir(), "hoist.db")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := store.Open(context.Background(), path)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			_, errs[i] = Dir(context.Background(), db, dir, Options{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db := openStore(t, path)
	counts, _ := db.Counts(context.Background())
	if counts["episodes"] != 5 || counts["log_files"] != 5 {
		t.Errorf("counts after concurrent ingests: %v", counts)
	}
}

func TestTau2ResultsAndLogsAgree(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	if _, err := Dir(ctx, db, copyTree(t, "tau2/logs"), Options{}); err != nil {
		t.Fatal(err)
	}
	results := copyTree(t, "tau2/results")
	files, _ := filepath.Glob(filepath.Join(results, "*.json"))
	st, err := Tau2(ctx, db, files, Tau2Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != len(files) || st.Sessions == 0 {
		t.Fatalf("τ² ingest: %+v", st)
	}
	if st2, err := Tau2(ctx, db, files, Tau2Options{}); err != nil || st2.Read != 0 || st2.Sessions != 0 {
		t.Errorf("τ² re-ingest: %+v, %v", st2, err)
	}
	logs, _ := db.Sessions(ctx, episode.Filter{})
	matched := 0
	for _, s := range logs {
		if s.Source != episode.SourceMCP {
			continue
		}
		sim := strings.TrimPrefix(s.HostSession, "tau2-")
		var twin *store.Session
		for i := range logs {
			if logs[i].Source == episode.SourceTau2 && strings.HasSuffix(logs[i].ID, "#"+sim) {
				twin = &logs[i]
			}
		}
		if twin == nil {
			continue
		}
		matched++
		a, _, _ := db.Episode(ctx, s.ID)
		b, _, _ := db.Episode(ctx, twin.ID)
		if diff := cmp.Diff(callList(a), callList(b)); diff != "" {
			t.Errorf("%s and %s differ in calls (-log +results):\n%s", s.ID, twin.ID, diff)
		}
		for _, bt := range b.Tools {
			at := a.Tool(bt.Name)
			if at == nil {
				continue
			}
			if at.Kind != bt.Kind || !jsonEqual(at.InputSchema, bt.InputSchema) {
				t.Errorf("tool %s: the log lists %s %s, the results file gives %s %s (from the store's listings)", bt.Name, at.Kind, at.InputSchema, bt.Kind, bt.InputSchema)
			}
		}
	}
	if matched == 0 {
		t.Fatal("no simulation is in both the logs and the results")
	}
}

func callList(ep *episode.Episode) []string {
	var out []string
	for _, c := range ep.Calls() {
		var args any
		json.Unmarshal(c.Args, &args)
		b, _ := json.Marshal(args)
		out = append(out, fmt.Sprintf("%s %s turn=%d error=%v", c.Tool, b, c.Turn, c.Result != nil && c.Result.IsError))
	}
	return out
}

// An ingest interrupted between sessions leaves whole sessions only: each is
// in one transaction, with others but always whole (issue 3, point 8; issue
// 13, point 1), and the next ingest completes it.
func TestInterruptedIngestLeavesWholeSessions(t *testing.T) {
	dir := copyTree(t, "tau2/logs")
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Dir(ctx, db, dir, Options{Workers: 1, Progress: func(p Progress) {
		if p.Lines > 0 {
			cancel() // after the first session is written
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted ingest: %v", err)
	}
	ss, _ := db.Sessions(context.Background(), episode.Filter{})
	if len(ss) == 0 || len(ss) == 5 {
		t.Fatalf("%d sessions written before the interrupt", len(ss))
	}
	for _, s := range ss {
		ep, _, _ := db.Episode(context.Background(), s.ID)
		if len(ep.Calls()) != s.Calls || s.Calls == 0 {
			t.Errorf("session %s is not whole: %d calls stored, %d counted", s.ID, len(ep.Calls()), s.Calls)
		}
	}
	st, err := Dir(context.Background(), db, dir, Options{})
	if err != nil || st.Sessions != 5-len(ss) {
		t.Errorf("the next ingest: %+v, %v", st, err)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}
