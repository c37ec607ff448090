package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/mcplog"
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
	if v := rdr.MetaData().KeyValueMetadata().FindValue("hoist.schema_version"); v == nil || *v != strconv.Itoa(db.SchemaVersion()) {
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
	if err != nil || !strings.Contains(string(card), "`tool_name`") || !strings.Contains(string(card), "`decisions` and `runs` not written: the store holds no rows") {
		t.Errorf("dataset card: %v\n%s", err, card)
	}
	// Without flow logs, no decisions or runs.
	for _, name := range []string{"decisions", "runs"} {
		if _, err := os.Stat(filepath.Join(out, name)); err == nil || res.Rows[name] != 0 {
			t.Errorf("%s written from a store without flow logs", name)
		}
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

// An export that fails midway leaves the earlier export as it was and no
// temporary directory beside it.
func TestFailedExportKeepsTheEarlierOne(t *testing.T) {
	db := testStore(t)
	out := filepath.Join(t.TempDir(), "export")
	if _, err := Export(context.Background(), db, Options{Format: JSONL, Out: out}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = Export(ctx, db, Options{Format: Parquet, Out: out, Progress: func(sessions, _ int64) {
		if sessions == 2 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("an export cancelled midway succeeded")
	}
	if after, _ := os.ReadFile(filepath.Join(out, "README.md")); !bytes.Equal(before, after) {
		t.Errorf("the earlier export's card changed:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(out, "calls", "domain=retail", "date=2026-03-08", "part-0.jsonl")); err != nil {
		t.Errorf("the earlier export lost its files: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
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

func TestExportFlowDatasets(t *testing.T) {
	db := testStore(t)
	ctx := context.Background()
	// Give session sb (airline, 2026-03-09) a flow log: a run of a lookup
	// taken and a stop, then a run that stopped at once.
	ep, _, err := db.Episode(ctx, "sb")
	if err != nil {
		t.Fatal(err)
	}
	const rule = `"rule":{"decider":"reach","threshold":0.3,"epsilon":0.1}`
	lines := []string{
		`{"type":"decision","site":"decide#0","offers":[{"tool":"get","args":{"a":2}}],"greedy":0,"taken":0,"propensity":0.9,` + rule + `}`,
		`{"type":"decision","site":"decide#1","offers":[],"greedy":-1,"taken":-1,"propensity":1,` + rule + `}`,
		`{"type":"run","call":"get","max_lookups":8,"fold":-1,` + rule + `,"sites":[["decide#0","get {\"a\":2}",-0.105],["obs#0","ok",-0.2],["decide#1","stop",0]],"surprise":0.2}`,
		`{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":-1,"propensity":1,` + rule + `}`,
		`{"type":"run","call":"set","failed":true,` + rule + `,"sites":[["decide#0","stop",null]]}`,
	}
	parse := func(i int) mcplog.FlowLine {
		l, err := mcplog.ParseFlowLine([]byte(lines[i]))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	decision := func(i, run, idx int) store.Decision {
		return store.Decision{Session: "log-b", Run: run, Index: idx, Line: i + 1, FlowDecision: *parse(i).Decision, Raw: lines[i]}
	}
	run := func(i, idx int) store.Run {
		return store.Run{Session: "log-b", Index: idx, Line: i + 1, FlowRun: *parse(i).Run, Raw: lines[i]}
	}
	fl := &store.Flow{
		Decisions: []store.Decision{decision(0, 0, 0), decision(1, 0, 1), decision(3, 1, 0)},
		Runs:      []store.Run{run(2, 0), run(4, 1)},
	}
	if _, err := db.Put(ctx, store.Unit{Episodes: []*episode.Episode{ep}, Flows: map[string]*store.Flow{"sb": fl}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "export")
	res, err := Export(ctx, db, Options{Format: JSONL, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows["decisions"] != 3 || res.Rows["runs"] != 2 || len(res.Written) != 6 || res.Files != 24 {
		t.Errorf("result: %+v", res)
	}
	rows := func(name string) []map[string]any {
		b, err := os.ReadFile(filepath.Join(out, name, "domain=airline", "date=2026-03-09", "part-0.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	d := rows("decisions")
	if len(d) != 3 || d[0]["session_id"] != "sb" || d[0]["server"] != "shop" || d[0]["taken_tool"] != "get" || d[0]["taken_args"] != `{"a":2}` ||
		d[0]["propensity"] != 0.9 || d[0]["offer_count"] != 1.0 || d[1]["taken_tool"] != nil || d[2]["run_index"] != 1.0 || d[0]["epsilon"] != 0.1 ||
		d[0]["offers"] != `[{"tool":"get","args":{"a":2}}]` || d[1]["offers"] != `[]` || d[0]["raw"] != lines[0] || d[2]["log_line"] != 4.0 {
		t.Errorf("decisions: %v", d)
	}
	r := rows("runs")
	if len(r) != 2 || r[0]["call_tool"] != "get" || r[0]["lookups"] != 1.0 || r[0]["logp_policy"] != -0.105 || r[1]["logp_policy"] != nil || r[1]["failed"] != true ||
		r[0]["decisions"] != 2.0 || r[0]["sites"] != `[["decide#0","get {\"a\":2}",-0.105],["obs#0","ok",-0.2],["decide#1","stop",0]]` || r[1]["decider"] != "reach" {
		t.Errorf("runs: %v", r)
	}
	// Another partition holds none: an empty file, so every partition has the dataset.
	if b, err := os.ReadFile(filepath.Join(out, "runs", "domain=retail", "date=2026-03-08", "part-0.jsonl")); err != nil || len(b) != 0 {
		t.Errorf("runs of a partition without flow logs: %q, %v", b, err)
	}

	// Parquet: typed columns, the schema version in the metadata.
	pq := filepath.Join(t.TempDir(), "pq")
	if _, err := Export(ctx, db, Options{Format: Parquet, Out: pq}); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.OpenParquetFile(filepath.Join(pq, "decisions", "domain=airline", "date=2026-03-09", "part-0.parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	if v := rdr.MetaData().KeyValueMetadata().FindValue("hoist.schema_version"); v == nil || *v != strconv.Itoa(db.SchemaVersion()) {
		t.Errorf("hoist.schema_version = %v", v)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := fr.Schema()
	for name, want := range map[string]arrow.DataType{"run_index": arrow.PrimitiveTypes.Int32, "propensity": arrow.PrimitiveTypes.Float64,
		"offer_count": arrow.PrimitiveTypes.Int64, "shadow": arrow.FixedWidthTypes.Boolean, "taken_tool": arrow.BinaryTypes.String} {
		if fs, ok := sc.FieldsByName(name); !ok || !arrow.TypeEqual(fs[0].Type, want) {
			t.Errorf("column %s: %v, want %v", name, fs, want)
		}
	}
	if rdr.NumRows() != 3 {
		t.Errorf("decisions rows: %d", rdr.NumRows())
	}
	card, _ := os.ReadFile(filepath.Join(pq, "README.md"))
	if strings.Contains(string(card), "not written") || !strings.Contains(string(card), "## decisions") || !strings.Contains(string(card), "`logp_policy`") {
		t.Errorf("card:\n%s", card)
	}
}
