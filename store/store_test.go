package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/migrations"
)

func openTemp(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hoist.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// sample builds an episode by hand: two turns, a parallel pair of calls, an
// error result, an unanswered call and the conversation around them.
func sample(id string, started time.Time) *episode.Episode {
	reward := 1.0
	ep := &episode.Episode{
		ID: id, Source: episode.SourceMCP, Domain: "retail", HostSession: "host-1", AgentModel: "m",
		TaskID: "7", Trial: 1, Reward: &reward, Started: started,
		Servers: []episode.Server{{Name: "shop", Session: id, Path: "/logs/" + id + ".jsonl", Command: []string{"shop-server"}, Info: json.RawMessage(`{"name":"shop"}`)}},
		Tools: []episode.Tool{
			{Name: "get_user", Server: "shop", Kind: episode.Read, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
			{Name: "cancel", Server: "shop", Kind: episode.Write, InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
	}
	c0 := &episode.Call{Index: 0, ID: "3", Server: "shop", Tool: "get_user", Args: json.RawMessage(`{"id":"u1"}`), By: episode.Agent, Turn: 0}
	c1 := &episode.Call{Index: 1, ID: `"hoist-1"`, Server: "shop", Tool: "get_user", Args: json.RawMessage(`{"id":"u2"}`), By: episode.Proxy, Turn: 0}
	c2 := &episode.Call{Index: 2, ID: "5", Server: "shop", Tool: "cancel", Args: json.RawMessage(`{"order":"#1"}`), By: episode.Agent, Turn: 1}
	c3 := &episode.Call{Index: 3, ID: "6", Server: "shop", Tool: "cancel", Args: json.RawMessage(`{}`), By: episode.Agent, Turn: 1, Cancelled: true}
	r0 := &episode.Result{CallIndex: 0, Text: "user u1", Raw: json.RawMessage(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"user u1"}]}}`)}
	r1 := &episode.Result{CallIndex: 1, Text: "user u2", Raw: json.RawMessage(`{"jsonrpc":"2.0","id":"hoist-1","result":{}}`)}
	r2 := &episode.Result{CallIndex: 2, Text: "no such order", IsError: true, Raw: json.RawMessage(`{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no such order"}}`)}
	c0.Result, c1.Result, c2.Result = r0, r1, r2
	ep.Events = []episode.Event{
		{Type: episode.EventMessage, TMS: 0, Message: &episode.Message{Role: "user", Text: "cancel my order"}},
		{Type: episode.EventCall, TMS: 10, Call: c0},
		{Type: episode.EventCall, TMS: 11, Call: c1},
		{Type: episode.EventResult, TMS: 14, Result: r1},
		{Type: episode.EventResult, TMS: 15, Result: r0},
		{Type: episode.EventMessage, TMS: 2000, Message: &episode.Message{Role: "assistant", Text: "done"}},
		{Type: episode.EventCall, TMS: 3000, Call: c2},
		{Type: episode.EventResult, TMS: 3020, Result: r2},
		{Type: episode.EventCall, TMS: 3030, Call: c3},
	}
	ep.Turns = []episode.Turn{{Index: 0, Calls: []int{0, 1}, StartMS: 10, EndMS: 15}, {Index: 1, Calls: []int{2, 3}, StartMS: 3000, EndMS: 3030}}
	return ep
}

func TestOpenSetsPragmasAndMigrates(t *testing.T) {
	db, _ := openTemp(t)
	if got, want := db.SchemaVersion(), migrations.Latest(); got != want {
		t.Errorf("SchemaVersion() = %d, want %d", got, want)
	}
	ctx := context.Background()
	for _, pool := range []struct {
		name string
		q    func(dest any, query string) error
	}{
		{"writer", func(d any, q string) error { return db.w.GetContext(ctx, d, q) }},
		{"reader", func(d any, q string) error { return db.r.GetContext(ctx, d, q) }},
	} {
		var mode string
		var fk, busy int
		if err := pool.q(&mode, "PRAGMA journal_mode"); err != nil || mode != "wal" {
			t.Errorf("%s: journal_mode = %q, %v", pool.name, mode, err)
		}
		if err := pool.q(&fk, "PRAGMA foreign_keys"); err != nil || fk != 1 {
			t.Errorf("%s: foreign_keys = %d, %v", pool.name, fk, err)
		}
		if err := pool.q(&busy, "PRAGMA busy_timeout"); err != nil || busy != 5000 {
			t.Errorf("%s: busy_timeout = %d, %v", pool.name, busy, err)
		}
	}
	if _, err := db.r.ExecContext(ctx, "DELETE FROM episodes"); err == nil {
		t.Error("the read pool accepted a write")
	}
}

func TestStoreIsPrivate(t *testing.T) {
	db, path := openTemp(t)
	if _, err := db.Put(context.Background(), Unit{Episodes: []*episode.Episode{sample("s", time.Now())}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}

func TestReopenIsIdempotent(t *testing.T) {
	db, path := openTemp(t)
	db.Close()
	db2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	var n int
	if err := db2.w.Get(&n, "SELECT count(*) FROM schema_migrations"); err != nil || n != migrations.Latest() {
		t.Errorf("schema_migrations rows = %d, %v; want %d", n, err, migrations.Latest())
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	db, path := openTemp(t)
	if _, err := db.w.Exec("INSERT INTO schema_migrations (version, name, applied_unix_ms) VALUES (?, 'from-the-future.sql', 0)", migrations.Latest()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(context.Background(), path)
	var ne *NewerSchemaError
	if !errors.As(err, &ne) {
		t.Fatalf("Open of a newer store: %v, want NewerSchemaError", err)
	}
	if ne.Store != migrations.Latest()+1 || ne.Binary != migrations.Latest() {
		t.Errorf("error = %+v", ne)
	}
}

func TestConcurrentOpenOfNewStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hoist.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(context.Background(), path)
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
}

func TestPutAndReadBack(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	start := time.Date(2026, 3, 8, 20, 47, 51, 563e6, time.UTC)
	ep := sample("s1", start)
	lines := []WireLine{{Server: 0, Line: 2, TMS: 0, From: "client", Message: json.RawMessage(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`)},
		{Server: 0, Line: 3, TMS: 1, From: "server", Raw: "Listening on stdio"}}
	file := LogFile{Path: "/logs/s1.jsonl", Dir: "/logs", Size: 100, SHA256: "abc", Status: StatusIngested, Session: "s1", HostSession: "host-1"}
	wrote, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{ep}, Lines: map[string][]WireLine{"s1": lines}, Files: []LogFile{file}})
	if err != nil || !wrote {
		t.Fatalf("Put = %v, %v", wrote, err)
	}
	got, s, err := db.Episode(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ep, got); diff != "" {
		t.Errorf("episode read back differs (-put +got):\n%s", diff)
	}
	want := Session{ID: "s1", Source: "mcp", Domain: "retail", HostSession: "host-1", AgentModel: mcplog.StringOrNil("m"), TaskID: "7", Trial: 1, Reward: ep.Reward,
		Started: start, DurationMS: 3030, Servers: []string{"shop"}, Turns: 2, Calls: 4, Reads: 2, Writes: 2, Errors: 1, Messages: 2}
	if diff := cmp.Diff(&want, s); diff != "" {
		t.Errorf("session row (-want +got):\n%s", diff)
	}

	// The same file again is a no-op.
	if wrote, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{ep}, Files: []LogFile{file}}); err != nil || wrote {
		t.Errorf("second Put = %v, %v; want no write", wrote, err)
	}
	// A changed file replaces the episodes it made, under their new id too.
	file.Size, file.SHA256 = 200, "def"
	ep2 := sample("s1-new", start)
	if wrote, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{ep2}, Files: []LogFile{file}}); err != nil || !wrote {
		t.Fatalf("Put of a changed file = %v, %v", wrote, err)
	}
	counts, err := db.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts["episodes"] != 1 || counts["calls"] != 4 || counts["wire_lines"] != 0 {
		t.Errorf("counts after replace = %v", counts)
	}
	if old, _, _ := db.Episode(ctx, "s1"); old != nil {
		t.Error("the replaced episode is still there")
	}
}

func TestSessionsFilters(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	day := time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)
	for i, d := range []string{"retail", "airline", "retail"} {
		ep := sample("s"+string(rune('a'+i)), day.Add(time.Duration(i)*24*time.Hour))
		ep.Domain = d
		if i == 2 {
			ep.HostSession = "host-2"
		}
		if _, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{ep}}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(f episode.Filter) []string {
		ss, err := db.Sessions(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    episode.Filter
		want []string
	}{
		{"all", episode.Filter{}, []string{"sa", "sb", "sc"}},
		{"domain", episode.Filter{Domain: "retail"}, []string{"sa", "sc"}},
		{"host session", episode.Filter{HostSession: "host-2"}, []string{"sc"}},
		{"since", episode.Filter{Since: day.Add(24 * time.Hour)}, []string{"sb", "sc"}},
		{"until", episode.Filter{Until: day.Add(24 * time.Hour)}, []string{"sa"}},
		{"ids", episode.Filter{IDs: []string{"sc", "sa"}}, []string{"sa", "sc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ids(tc.f)); diff != "" {
				t.Error(diff)
			}
		})
	}
	parts, err := db.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Partition{{"airline", "2026-03-09"}, {"retail", "2026-03-08"}, {"retail", "2026-03-10"}}
	if diff := cmp.Diff(want, parts); diff != "" {
		t.Errorf("partitions: %s", diff)
	}
	var n int
	if err := db.Episodes(ctx, episode.Filter{Domain: "retail"}, func(*episode.Episode) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("Episodes(retail) = %d, %v", n, err)
	}
}

func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.db")
	if err := writeFile(path, "this is not sqlite, it is a long enough text file to have a header page........................................"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), path); err == nil {
		t.Fatal("opened a text file as a store")
	}
}
