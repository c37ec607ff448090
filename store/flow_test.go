package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/migrations"
)

func sampleFlow() *Flow {
	rule := Rule{Decider: "reach", Threshold: 0.3, Epsilon: 0.5}
	return &Flow{
		Decisions: []Decision{
			{Server: 0, Session: "s1", Run: 0, Index: 0, Line: 1, Site: "decide#0", NOffers: 1,
				Offers: json.RawMessage(`[{"tool":"get_user","args":{"id":"u2"}}]`), Greedy: 0, Taken: 0, Propensity: 0.5,
				TakenTool: sql.NullString{String: "get_user", Valid: true}, TakenArgs: json.RawMessage(`{"id":"u2"}`), Rule: rule, Raw: `{"type":"decision"}`},
			{Server: 0, Session: "s1", Run: 0, Index: 1, Line: 2, Site: "decide#1", Offers: json.RawMessage(`[]`), Greedy: -1, Taken: -1,
				Propensity: 1, Rule: rule, Raw: `{"type":"decision","site":"decide#1"}`},
		},
		Runs: []Run{{Server: 0, Session: "s1", Index: 0, Line: 3, CallTool: "get_user", MaxLookups: 8, Fold: -1, Rule: rule,
			NDecisions: 2, NLookups: 1, Sites: json.RawMessage(`[["decide#0","get_user {}",-0.69],["obs#0","ok",-0.2],["decide#1","stop",0]]`),
			Surprise: 0.2, LogPolicy: sql.NullFloat64{Float64: -0.69, Valid: true}, Shadow: true, Raw: `{"type":"run"}`}},
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
	u.Flows["s1"].Runs = append(u.Flows["s1"].Runs, Run{Index: 1, Line: 4, CallTool: "cancel", Raw: "{}"})
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
