package store

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/migrations"
)

// The lines of sampleFlow, as a proxy might have logged them (the space in
// the args is kept by the raw columns).
const (
	sampleDecision0 = `{"type":"decision","site":"decide#0","offers":[{"tool":"get_user","args":{"id": "u2"},"binding":{"id":"$result.id"},` +
		`"from":"find_user","p_reach":0.5,"p_habit":0.25,"p_binding":1,"support":4}],"greedy":0,"taken":0,"propensity":0.5,` +
		`"rule":{"decider":"reach","threshold":0.3,"epsilon":0.5},"shadow":true}`
	sampleDecision1 = `{"type":"decision","site":"decide#1","offers":[],"greedy":-1,"taken":-1,"propensity":1,` +
		`"rule":{"decider":"reach","threshold":0.3,"epsilon":0.5},"shadow":true}`
	sampleRun = `{"type":"run","call":"find_user","failed":false,"max_lookups":8,"fold":-1,"rule":{"decider":"reach","threshold":0.3,"epsilon":0.5},` +
		`"sites":[["decide#0","get_user {\"id\": \"u2\"}",-0.69],["obs#0","ok",-0.2],["decide#1","stop",0]],"surprise":0.2,"shadow":true}`
)

func parsed(line string) mcplog.FlowLine {
	l, err := mcplog.ParseFlowLine([]byte(line))
	if err != nil {
		panic(err)
	}
	return l
}

func sampleFlow() *Flow {
	return &Flow{
		Decisions: []Decision{
			{Server: 0, Session: "s1", Run: 0, Index: 0, Line: 1, FlowDecision: *parsed(sampleDecision0).Decision, Raw: sampleDecision0},
			{Server: 0, Session: "s1", Run: 0, Index: 1, Line: 2, FlowDecision: *parsed(sampleDecision1).Decision, Raw: sampleDecision1},
		},
		Runs: []Run{{Server: 0, Session: "s1", Index: 0, Line: 3, FlowRun: *parsed(sampleRun).Run, Raw: sampleRun}},
	}
}

// The columns beside raw are derived from the line: its JSON members as
// logged, what was taken, the rule, a run's counts and log-policy.
func TestFlowColumns(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	fl := sampleFlow()
	// A line made in memory, without its raw JSON: Put writes the parsed
	// line's, and reads it back the same.
	made := Run{Server: 0, Session: "s1", Index: 1, Line: 5, FlowRun: mcplog.FlowRun{Type: mcplog.TypeRun, Call: "cancel", Fold: -1,
		Sites: []mcplog.FlowSite{{Address: "decide#0", Value: "stop", LogP: math.Inf(-1)}}}}
	fl.Runs = append(fl.Runs, made)
	if _, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{sample("s1", time.Now())}, Flows: map[string]*Flow{"s1": fl}}); err != nil {
		t.Fatal(err)
	}
	type decisionCols struct {
		NOffers   int            `db:"n_offers"`
		Offers    string         `db:"offers"`
		TakenTool sql.NullString `db:"taken_tool"`
		TakenArgs sql.NullString `db:"taken_args"`
		Decider   string         `db:"rule_decider"`
		Epsilon   float64        `db:"rule_epsilon"`
		Shadow    bool           `db:"shadow"`
	}
	var ds []decisionCols
	if err := db.w.SelectContext(ctx, &ds, "SELECT n_offers, offers, taken_tool, taken_args, rule_decider, rule_epsilon, shadow FROM decisions ORDER BY idx"); err != nil {
		t.Fatal(err)
	}
	want := []decisionCols{
		{1, `[{"tool":"get_user","args":{"id": "u2"},"binding":{"id":"$result.id"},"from":"find_user","p_reach":0.5,"p_habit":0.25,"p_binding":1,"support":4}]`,
			sql.NullString{String: "get_user", Valid: true}, sql.NullString{String: `{"id": "u2"}`, Valid: true}, "reach", 0.5, true},
		{0, `[]`, sql.NullString{}, sql.NullString{}, "reach", 0.5, true},
	}
	if diff := cmp.Diff(want, ds); diff != "" {
		t.Errorf("decision columns (-want +got):\n%s", diff)
	}
	type runCols struct {
		Call       string          `db:"call_tool"`
		NDecisions int             `db:"n_decisions"`
		NLookups   int             `db:"n_lookups"`
		Sites      string          `db:"sites"`
		LogPolicy  sql.NullFloat64 `db:"logp_policy"`
		Raw        string          `db:"raw"`
	}
	var rs []runCols
	if err := db.w.SelectContext(ctx, &rs, "SELECT call_tool, n_decisions, n_lookups, sites, logp_policy, raw FROM runs ORDER BY idx"); err != nil {
		t.Fatal(err)
	}
	wantRuns := []runCols{
		{"find_user", 2, 1, `[["decide#0","get_user {\"id\": \"u2\"}",-0.69],["obs#0","ok",-0.2],["decide#1","stop",0]]`, sql.NullFloat64{Float64: -0.69, Valid: true}, sampleRun},
		{"cancel", 1, 0, `[["decide#0","stop",null]]`, sql.NullFloat64{},
			`{"type":"run","call":"cancel","failed":false,"max_lookups":0,"fold":-1,"rule":{"decider":"","threshold":0,"epsilon":0},"sites":[["decide#0","stop",null]],"surprise":0}`},
	}
	if diff := cmp.Diff(wantRuns, rs); diff != "" {
		t.Errorf("run columns (-want +got):\n%s", diff)
	}
	got, err := db.Flow(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	made.Raw = wantRuns[1].Raw
	if diff := cmp.Diff(made, got.Runs[1], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the run made in memory, read back (-put +got):\n%s", diff)
	}
}

// A stored line that no longer reads (written by hand, or by a broken
// hoist) is an error naming it, not a silent zero.
func TestFlowOfAnUnreadableStoredLine(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	if _, err := db.Put(ctx, Unit{Episodes: []*episode.Episode{sample("s1", time.Now())}, Flows: map[string]*Flow{"s1": sampleFlow()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE decisions SET raw = '{"type":"decision","site":"decide#1"}' WHERE idx = 1`); err != nil {
		t.Fatal(err)
	}
	_, err := db.Flow(ctx, "s1")
	if err == nil || !strings.Contains(err.Error(), "decision at line 2 of s1's flow log: greedy: want -1 or an index into 0 offers") {
		t.Errorf("Flow = %v", err)
	}
}

func TestFlowPutReadAndReplace(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	start := time.Date(2026, 3, 8, 20, 47, 51, 0, time.UTC)
	file := LogFile{Path: "/logs/s1.jsonl", Dir: "/logs", Size: 100, SHA256: "abc", Status: StatusIngested, Session: "s1"}
	flowFile := FlowFile{Path: "/logs/s1.flow.jsonl", Dir: "/logs", LogPath: file.Path, Size: 10, SHA256: "f1", Lines: 3}
	fl := sampleFlow()
	u := Unit{Episodes: []*episode.Episode{sample("s1", start)}, Files: []LogFile{file}, Flows: map[string]*Flow{"s1": fl}, FlowFiles: []FlowFile{flowFile}}
	if wrote, err := db.Put(ctx, u); err != nil || !wrote {
		t.Fatalf("Put = %v, %v", wrote, err)
	}
	got, err := db.Flow(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fl, got); diff != "" {
		t.Errorf("flow read back (-put +got):\n%s", diff)
	}
	_, s, _ := db.Episode(ctx, "s1")
	if s.Runs != 1 || s.Decisions != 2 {
		t.Errorf("session counts: %d runs, %d decisions", s.Runs, s.Decisions)
	}
	// Unchanged files: no write.
	if wrote, err := db.Put(ctx, u); err != nil || wrote {
		t.Errorf("Put of the same files = %v, %v", wrote, err)
	}
	// The flow log grew: written again, though the session log did not change.
	u.FlowFiles[0].Size, u.FlowFiles[0].SHA256 = 20, "f2"
	u.Flows["s1"].Runs = append(u.Flows["s1"].Runs, Run{Index: 1, Line: 4, FlowRun: mcplog.FlowRun{Type: mcplog.TypeRun, Call: "cancel"}})
	if wrote, err := db.Put(ctx, u); err != nil || !wrote {
		t.Errorf("Put after the flow log grew = %v, %v", wrote, err)
	}
	counts, _ := db.Counts(ctx)
	if counts["runs"] != 2 || counts["decisions"] != 2 || counts["flow_files"] != 1 {
		t.Errorf("counts: %v", counts)
	}
	// The flow log is gone: its rows and its record go.
	u.Flows, u.FlowFiles = nil, nil
	if wrote, err := db.Put(ctx, u); err != nil || !wrote {
		t.Errorf("Put after the flow log went = %v, %v", wrote, err)
	}
	counts, _ = db.Counts(ctx)
	if counts["runs"] != 0 || counts["decisions"] != 0 || counts["flow_files"] != 0 {
		t.Errorf("counts: %v", counts)
	}
	var parts int
	p := Partition{Domain: "retail", Date: "2026-03-08"}
	if err := db.EpisodesIn(ctx, p, func(ep *episode.Episode, s Session, fl *Flow) error {
		parts++
		if fl == nil || len(fl.Runs) != 0 {
			t.Errorf("flow of %s: %+v", ep.ID, fl)
		}
		return nil
	}); err != nil || parts != 1 {
		t.Errorf("EpisodesIn: %d, %v", parts, err)
	}
}

// A store written before the flow-log tables existed opens, gains them, and
// keeps its episodes; a binary that knows only the first schema refuses the
// upgraded store.
func TestStoreOfTheFirstSchemaUpgrades(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hoist.db")
	all, err := migrations.All()
	if err != nil || len(all) < 2 {
		t.Fatalf("migrations: %d, %v", len(all), err)
	}
	// Play the hoist of schema 1: apply only the first migration.
	db1, err := openWriter(ctx, path, all[:1])
	if err != nil {
		t.Fatal(err)
	}
	// Its writer knew only schema 1's columns.
	if _, err := db1.w.ExecContext(ctx, "INSERT INTO episodes (id, source, started_unix_ms, ingested_unix_ms) VALUES ('old', 'mcp', ?, ?)",
		time.Now().UnixMilli(), time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	db1.Close()

	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if db.SchemaVersion() != migrations.Latest() {
		t.Errorf("schema version %d, want %d", db.SchemaVersion(), migrations.Latest())
	}
	ss, err := db.Sessions(ctx, episode.Filter{})
	if err != nil || len(ss) != 1 || ss[0].ID != "old" || ss[0].Runs != 0 {
		t.Errorf("sessions after the upgrade: %+v, %v", ss, err)
	}
	db.Close()

	// The hoist of schema 1 opening it again is refused in plain words.
	_, err = openWriter(ctx, path, all[:1])
	var ne *NewerSchemaError
	if !errors.As(err, &ne) || ne.Store != migrations.Latest() || ne.Binary != 1 {
		t.Errorf("schema-1 hoist on an upgraded store: %v", err)
	}
}
