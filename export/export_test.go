package export

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

func testStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hoist.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	day := time.Date(2026, 3, 8, 20, 0, 0, 0, time.UTC)
	for i, dom := range []string{"retail", "airline", "retail", ""} {
		reward := 1.0
		ep := &episode.Episode{
			ID: "s" + string(rune('a'+i)), Source: episode.SourceMCP, Domain: dom, HostSession: "h", Started: day.Add(time.Duration(i) * 24 * time.Hour),
			Reward:  &reward,
			Servers: []episode.Server{{Name: "shop"}},
			Tools:   []episode.Tool{{Name: "get", Kind: episode.Read}, {Name: "set", Kind: episode.Write}},
		}
		c0 := &episode.Call{Index: 0, ID: "1", Server: "shop", Tool: "get", Args: json.RawMessage(`{"a":1}`), By: episode.Agent, Turn: 0}
		c1 := &episode.Call{Index: 1, ID: "2", Server: "shop", Tool: "set", Args: json.RawMessage(`{}`), By: episode.Agent, Turn: 1, Cancelled: true}
		r0 := &episode.Result{CallIndex: 0, Text: "ok", Raw: json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{}}`)}
		c0.Result = r0
		ep.Events = []episode.Event{
			{Type: episode.EventMessage, TMS: 0, Message: &episode.Message{Role: "user", Text: "hi"}},
			{Type: episode.EventCall, TMS: 5, Call: c0},
			{Type: episode.EventResult, TMS: 9, Result: r0},
			{Type: episode.EventCall, TMS: 2000, Call: c1},
		}
		ep.Turns = []episode.Turn{{Index: 0, Calls: []int{0}, StartMS: 5, EndMS: 9}, {Index: 1, Calls: []int{1}, StartMS: 2000, EndMS: 2000}}
		if _, err := db.Put(context.Background(), store.Unit{Episodes: []*episode.Episode{ep}}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

var wantRows = map[string]int64{"sessions": 4, "turns": 8, "calls": 8, "messages": 4}

func TestExportParquet(t *testing.T) {
	db := testStore(t)
	out := filepath.Join(t.TempDir(), "export")
	res, err := Export(context.Background(), db, Options{Format: Parquet, Out: out, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range wantRows {
		if res.Rows[name] != n {
			t.Errorf("rows[%s] = %d, want %d", name, res.Rows[name], n)
		}
	}
	if res.Partitions != 4 || res.Files != 16 {
		t.Errorf("partitions %d, files %d", res.Partitions, res.Files)
	}
	p := filepath.Join(out, "calls", "domain=retail", "date=2026-03-08", "part-0.parquet")
	rdr, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	if v := rdr.MetaData().KeyValueMetadata().FindValue("hoist.schema_version"); v == nil || *v != "1" {
		t.Errorf("hoist.schema_version = %v", v)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]arrow.DataType{"called_at": arrow.FixedWidthTypes.Timestamp_ms, "call_index": arrow.PrimitiveTypes.Int32, "tool_name": arrow.BinaryTypes.String, "is_error": arrow.FixedWidthTypes.Boolean} {
		fs, ok := sc.FieldsByName(name)
		if !ok || !arrow.TypeEqual(fs[0].Type, want) {
			t.Errorf("column %s: %v, want %v", name, fs, want)
		}
	}
	if rdr.NumRows() != 2 {
		t.Errorf("rows in %s = %d", p, rdr.NumRows())
	}
	if _, err := os.Stat(filepath.Join(out, "sessions", "domain=__HIVE_DEFAULT_PARTITION__", "date=2026-03-11", "part-0.parquet")); err != nil {
		t.Errorf("no default partition for a session without a domain: %v", err)
	}
	card, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil || !strings.Contains(string(card), "`tool_name`") {
		t.Errorf("dataset card: %v\n%s", err, card)
	}

	// An export replaces an earlier one, and leaves nothing beside it.
	if _, err := Export(context.Background(), db, Options{Format: Parquet, Out: out}); err != nil {
		t.Fatalf("re-export: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Errorf("beside the export: %v", entries)
	}
}

func TestExportRefusesAForeignDirectory(t *testing.T) {
	db := testStore(t)
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "thesis.tex"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(context.Background(), db, Options{Format: Parquet, Out: out}); err == nil || !strings.Contains(err.Error(), "not a hoist export") {
		t.Fatalf("Export into a foreign directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "thesis.tex")); err != nil {
		t.Error("the foreign file is gone")
	}
}

func TestExportArrow(t *testing.T) {
	db := testStore(t)
	out := filepath.Join(t.TempDir(), "export")
	if _, err := Export(context.Background(), db, Options{Format: Arrow, Out: out}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(out, "sessions", "domain=retail", "date=2026-03-10", "part-0.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if v, ok := r.Schema().Metadata().GetValue("hoist.dataset"); !ok || v != "sessions" {
		t.Errorf("hoist.dataset = %q", v)
	}
	var n int64
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		n += rec.NumRows()
	}
	if n != 1 {
		t.Errorf("rows = %d", n)
	}
}

func TestExportJSONL(t *testing.T) {
	db := testStore(t)
	out := filepath.Join(t.TempDir(), "export")
	if _, err := Export(context.Background(), db, Options{Format: JSONL, Out: out}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(out, "calls", "domain=airline", "date=2026-03-09", "part-0.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var rows []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, m)
	}
	if len(rows) != 2 || rows[0]["tool_name"] != "get" || rows[0]["called_at"] != "2026-03-09T20:00:00.005Z" || rows[1]["answered_at"] != nil {
		t.Errorf("rows = %v", rows)
	}
}
