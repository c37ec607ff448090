package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/store"
)

// testdata/sessions/flow holds two sessions hoist-mcp --flow recorded in
// front of hoist-mcp-demo, one exploring (ε 0.5) and one in shadow, each
// with its flow log: 7 decisions and 4 runs.
const (
	flowExplore = "20261130T000801.483Z-29321"
	flowShadow  = "20261130T000805.901Z-29526"
)

func flowSessions(t *testing.T, db *store.DB) map[string]store.Session {
	t.Helper()
	ss, err := db.Sessions(context.Background(), episode.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Session{}
	for _, s := range ss {
		out[s.ID] = s
	}
	return out
}

func TestFlowLogsIngestedWithTheirSessions(t *testing.T) {
	dir := copyTree(t, "sessions/flow")
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	var w warnings
	st, err := Dir(ctx, db, dir, Options{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 2 || st.Sessions != 2 || st.FlowLogs != 2 || st.Decisions != 14 || st.Runs != 8 || st.Problems() || len(w.msgs) > 0 {
		t.Fatalf("stats: %+v, warnings:\n%s", st, w.String())
	}
	ss := flowSessions(t, db)
	for _, id := range []string{flowExplore, flowShadow} {
		if s := ss[id]; s.Runs != 4 || s.Decisions != 7 {
			t.Errorf("%s: %d runs, %d decisions; want 4 and 7", id, s.Runs, s.Decisions)
		}
	}
	fl, err := db.Flow(ctx, flowExplore)
	if err != nil {
		t.Fatal(err)
	}
	d := fl.Decisions[0]
	o := d.TakenOffer()
	if d.Run != 0 || d.Index != 0 || d.Line != 1 || d.Site != "decide#0" || len(d.Offers) != 1 || d.Taken != 0 || d.Greedy != 0 ||
		d.Propensity != 1 || o == nil || o.Tool != "lookup" || string(o.Args) != `{"text":"b"}` || o.Binding["text"] != "$result.next" ||
		d.Rule != (mcplog.FlowRule{Decider: "reach", Threshold: 0.3, Epsilon: 0.5}) || d.Shadow || d.Session != flowExplore ||
		!strings.HasPrefix(d.Raw, `{"type":"decision"`) {
		t.Errorf("first decision: %+v", d)
	}
	if d := fl.Decisions[2]; d.Run != 1 || d.Index != 0 || d.TakenOffer() != nil || d.Taken != -1 {
		t.Errorf("the decision of the second run (after update): %+v", d)
	}
	r := fl.Runs[0]
	decisions, lookups := r.Counts()
	if r.Index != 0 || r.Line != 3 || r.Call != "lookup" || r.Failed || r.MaxLookups != 8 || r.Fold != -1 || decisions != 2 ||
		lookups != 1 || r.Surprise <= 0 || r.LogPolicy() != 0 || len(r.Sites) != 3 || r.Sites[0].Address != "decide#0" {
		t.Errorf("first run: %+v", r)
	}
	if got := []string{fl.Runs[1].Call, fl.Runs[2].Call, fl.Runs[3].Call}; !cmp.Equal(got, []string{"update", "lookup", "lookup"}) {
		t.Errorf("runs follow the calls: %v", got)
	}
	shadow, _ := db.Flow(ctx, flowShadow)
	if _, lookups := shadow.Runs[0].Counts(); !shadow.Decisions[0].Shadow || !shadow.Runs[0].Shadow || lookups != 0 {
		t.Errorf("shadow flow: %+v %+v", shadow.Decisions[0], shadow.Runs[0])
	}

	before, _ := db.Counts(ctx)
	st, err = Dir(ctx, db, dir, Options{Warn: w.add})
	if err != nil || st.Read != 0 || st.Sessions != 0 || st.FlowLogs != 0 {
		t.Errorf("re-ingest: %+v, %v; want nothing read", st, err)
	}
	after, _ := db.Counts(ctx)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("re-ingest changed the store:\n%s", diff)
	}
	if before["decisions"] != 14 || before["runs"] != 8 || before["flow_files"] != 2 {
		t.Errorf("counts: %v", before)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

const (
	decisionLine = `{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":-1,"propensity":1,"rule":{"decider":"reach","threshold":0.3,"epsilon":0.5}}`
	runLine      = `{"type":"run","call":"update","failed":true,"max_lookups":8,"fold":-1,"rule":{"decider":"reach","threshold":0.3,"epsilon":0.5},"sites":[["decide#0","stop",0]],"surprise":0}`
)

// A flow log that grew is read again with its session, though the session
// log did not change; a torn last line waits for the next ingest; a flow log
// that went takes its rows with it.
func TestGrownFlowLogIsReadAgain(t *testing.T) {
	dir := copyTree(t, "sessions/flow")
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	if _, err := Dir(ctx, db, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, flowExplore+".flow.jsonl")
	appendTo(t, path, decisionLine+"\n"+runLine+"\n"+`{"type":"decision","site":"dec`)
	var w warnings
	st, err := Dir(ctx, db, dir, Options{Warn: w.add})
	if err != nil || st.Read != 1 || st.Sessions != 1 || st.FlowLogs != 1 || st.Malformed != 0 || len(w.msgs) > 0 {
		t.Fatalf("ingest of the grown flow log: %+v, %v\n%s", st, err, w.String())
	}
	if s := flowSessions(t, db)[flowExplore]; s.Runs != 5 || s.Decisions != 8 {
		t.Errorf("after growth: %d runs, %d decisions", s.Runs, s.Decisions)
	}
	fl, _ := db.Flow(ctx, flowExplore)
	if r := fl.Runs[4]; r.Index != 4 || r.Line != 13 || r.Call != "update" || !r.Failed {
		t.Errorf("the new run: %+v", r)
	}
	if d := fl.Decisions[7]; d.Run != 4 || d.Index != 0 || d.Line != 12 {
		t.Errorf("the new decision: %+v", d)
	}
	// Unchanged now: skipped.
	if st, err := Dir(ctx, db, dir, Options{}); err != nil || st.Read != 0 {
		t.Errorf("re-ingest: %+v, %v", st, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if st, err := Dir(ctx, db, dir, Options{}); err != nil || st.Read != 1 {
		t.Errorf("ingest after the flow log went: %+v, %v", st, err)
	}
	if s := flowSessions(t, db)[flowExplore]; s.Runs != 0 || s.Decisions != 0 || s.Calls == 0 {
		t.Errorf("after the flow log went: %+v", s)
	}
	if c, _ := db.Counts(ctx); c["flow_files"] != 1 {
		t.Errorf("flow files recorded: %d", c["flow_files"])
	}
}

func TestMalformedFlowLineAndOrphanFlowLog(t *testing.T) {
	dir := copyTree(t, "sessions/flow")
	path := filepath.Join(dir, flowShadow+".flow.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	bad := []string{
		`{"type":"decision","site":"decide#0","offers":[],"greedy":"zero","taken":-1}` + "\n",
		`not json` + "\n",
		`{"type":"verdict"}` + "\n",
		`{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":3}` + "\n",
	}
	// After line 3 (the first run): four bad lines, lines 4 to 7.
	out := strings.Join(lines[:3], "") + strings.Join(bad, "") + strings.Join(lines[3:], "")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "20261130T010000.000Z-1.flow.jsonl")
	if err := os.WriteFile(orphan, []byte(decisionLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	var w warnings
	st, err := Dir(context.Background(), db, dir, Options{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	if st.Malformed != 4 || st.OrphanFlows != 1 || st.Sessions != 2 || !st.Problems() {
		t.Errorf("stats: %+v", st)
	}
	for _, want := range []string{
		path + ":4: greedy: want an integer, got a JSON string",
		path + ":5: not a JSON object",
		path + `:6: type: want "decision", "run" or "off", got "verdict"`,
		path + ":7: taken: want -1 or an index into 0 offers",
		"(line skipped; the rest of the flow log is ingested)",
		orphan + ": skipped: a flow log without its session log " + strings.TrimSuffix(orphan, ".flow.jsonl") + ".jsonl",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("warnings lack %q:\n%s", want, w.String())
		}
	}
	if s := flowSessions(t, db)[flowShadow]; s.Runs != 4 || s.Decisions != 7 {
		t.Errorf("the rest of the flow log: %d runs, %d decisions", s.Runs, s.Decisions)
	}
	fl, _ := db.Flow(context.Background(), flowShadow)
	if d := fl.Decisions[2]; d.Line != 8 || d.Run != 1 {
		t.Errorf("the decision after the bad lines keeps its line: %+v", d)
	}
}

// Two servers of one host session, each with a flow log: the merged
// episode holds both, each row with its server.
func TestFlowLogsOfAMergedSession(t *testing.T) {
	dir := copyTree(t, "sessions/support")
	for i, name := range []string{"20260923T212000.000Z-101", "20260923T212000.020Z-102"} {
		body := strings.Repeat(fmt.Sprintf(`{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":-1,"propensity":1,"rule":{"decider":"habit","threshold":0.%d,"epsilon":0}}`+"\n", i+1), i+1)
		if err := os.WriteFile(filepath.Join(dir, name+".flow.jsonl"), []byte(body+runLine+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := openStore(t, filepath.Join(t.TempDir(), "hoist.db"))
	ctx := context.Background()
	if _, err := Dir(ctx, db, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ss, _ := db.Sessions(ctx, episode.Filter{HostSession: "hs-1"})
	if len(ss) != 1 || ss[0].Runs != 2 || ss[0].Decisions != 3 {
		t.Fatalf("hs-1: %+v", ss)
	}
	fl, _ := db.Flow(ctx, ss[0].ID)
	var got []string
	for _, d := range fl.Decisions {
		got = append(got, fmt.Sprintf("%d %s %d/%d", d.Server, d.Session, d.Run, d.Index))
	}
	want := []string{"0 20260923T212000.000Z-101 0/0", "1 20260923T212000.020Z-102 0/0", "1 20260923T212000.020Z-102 0/1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (server session run/index):\n%s", diff)
	}
}

func TestConcurrentIngestsOfFlowLogs(t *testing.T) {
	dir := copyTree(t, "sessions/flow")
	path := filepath.Join(t.TempDir(), "hoist.db")
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			db, err := store.Open(context.Background(), path)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			_, err = Dir(context.Background(), db, dir, Options{})
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	db := openStore(t, path)
	c, _ := db.Counts(context.Background())
	if c["episodes"] != 2 || c["decisions"] != 14 || c["runs"] != 8 || c["flow_files"] != 2 {
		t.Errorf("counts after concurrent ingests: %v", c)
	}
}
