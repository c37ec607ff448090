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

// putSchema3 writes ep and its wire lines as the hoist of schema 3 did: a
// row per server, tool, message, call and turn, and per wire line.
func putSchema3(t *testing.T, db *DB, ep *episode.Episode, lines []WireLine) {
	t.Helper()
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.w.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	nullRaw := func(b json.RawMessage) sql.NullString { return sql.NullString{String: string(b), Valid: b != nil} }
	s := Summarize(ep)
	exec(`INSERT INTO episodes (id, source, domain, host_session, agent_model, client_name, task_id, trial, reward,
		started_unix_ms, duration_ms, n_turns, n_calls, n_reads, n_writes, n_errors, n_messages, ingested_unix_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ep.ID, ep.Source, ep.Domain, ep.HostSession, ep.AgentModel, ep.ClientName, ep.TaskID, ep.Trial, *ep.Reward,
		ep.Started.UnixMilli(), s.DurationMS, s.Turns, s.Calls, s.Reads, s.Writes, s.Errors, s.Messages, 1)
	for i, sv := range ep.Servers {
		cmd, _ := json.Marshal(sv.Command)
		exec("INSERT INTO servers (episode_id, idx, name, session, path, command, info) VALUES (?, ?, ?, ?, ?, ?, ?)",
			ep.ID, i, sv.Name, sv.Session, sv.Path, string(cmd), nullRaw(sv.Info))
	}
	for i, tl := range ep.Tools {
		exec("INSERT INTO tools (episode_id, idx, name, server, kind, input_schema, annotations) VALUES (?, ?, ?, ?, ?, ?, ?)",
			ep.ID, i, tl.Name, tl.Server, kindOr(tl.Kind), nullRaw(tl.InputSchema), nullRaw(tl.Annotations))
	}
	resultAt := map[int]int{}
	for i, ev := range ep.Events {
		if ev.Type == episode.EventResult {
			if _, ok := resultAt[ev.Result.CallIndex]; !ok {
				resultAt[ev.Result.CallIndex] = i
			}
		}
	}
	nMsg := 0
	for i, ev := range ep.Events {
		switch ev.Type {
		case episode.EventMessage:
			exec("INSERT INTO messages (episode_id, idx, seq, t_ms, role, text) VALUES (?, ?, ?, ?, ?, ?)", ep.ID, nMsg, i, ev.TMS, ev.Message.Role, ev.Message.Text)
			nMsg++
		case episode.EventCall:
			c := ev.Call
			var rseq, rtms sql.NullInt64
			var rtext, rraw sql.NullString
			isErr := false
			if r := c.Result; r != nil {
				if at, ok := resultAt[c.Index]; ok {
					rseq = sql.NullInt64{Int64: int64(at), Valid: true}
					rtms = sql.NullInt64{Int64: ep.Events[at].TMS, Valid: true}
				}
				rtext, rraw, isErr = sql.NullString{String: r.Text, Valid: true}, nullRaw(r.Raw), r.IsError
			}
			exec(`INSERT INTO calls (episode_id, idx, seq, t_ms, request_id, server, tool, kind, arguments, actor, turn,
				cancelled, unreadable, result_seq, result_t_ms, result_text, is_error, result_raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				ep.ID, c.Index, i, ev.TMS, c.ID, c.Server, c.Tool, kindOr(ep.Tool(c.Tool).Kind), nullRaw(c.Args), string(c.By), c.Turn,
				c.Cancelled, c.Unreadable, rseq, rtms, rtext, isErr, rraw)
		}
	}
	for _, tn := range ep.Turns {
		exec("INSERT INTO turns (episode_id, idx, start_ms, end_ms, n_calls) VALUES (?, ?, ?, ?, ?)", ep.ID, tn.Index, tn.StartMS, tn.EndMS, len(tn.Calls))
	}
	for _, l := range lines {
		var raw sql.NullString
		if l.Message == nil {
			raw = sql.NullString{String: l.Raw, Valid: true}
		}
		exec("INSERT INTO wire_lines (episode_id, server_idx, line_no, t_ms, sender, message, raw) VALUES (?, ?, ?, ?, ?, ?, ?)",
			ep.ID, l.Server, l.Line, l.TMS, l.From, nullRaw(l.Message), raw)
	}
}

// wireRows returns the wire lines of a store as SQL sees them.
func wireRows(t *testing.T, db *DB) [][]any {
	t.Helper()
	rows, err := db.r.Query("SELECT episode_id, server_idx, line_no, t_ms, sender, message, raw FROM wire_lines ORDER BY episode_id, server_idx, line_no")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		var id, sender string
		var srv, line, tms int64
		var msg, raw sql.NullString
		if err := rows.Scan(&id, &srv, &line, &tms, &sender, &msg, &raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, []any{id, srv, line, tms, sender, msg, raw})
	}
	return out
}

// A store written by the hoist of schema 3, a row per item, upgrades to
// one document per episode and loses nothing: every episode reads back as
// the same episode written by today's hoist, and the old tables' rows are
// still there to SQL, as views.
func TestSchema3StoreUpgradesWithEveryEpisode(t *testing.T) {
	ctx := context.Background()
	all, err := migrations.All()
	if err != nil || len(all) < 4 {
		t.Fatalf("migrations: %d, %v", len(all), err)
	}
	start := time.Date(2026, 3, 8, 20, 47, 51, 563e6, time.UTC)
	eps := []*episode.Episode{sample("a", start), sample("b", start.Add(time.Hour))}
	// b: a server that told nothing, a call never answered, text that needs
	// escapes.
	eps[1].Servers[0].Info = nil
	eps[1].Events[0].Message.Text = "line one\nline \"two\" \u2028 é"
	eps[1].Events = eps[1].Events[:len(eps[1].Events)-1]
	eps[1].Turns[1].Calls = []int{2}
	lines := map[string][]WireLine{"a": {
		{Server: 0, Line: 2, TMS: 0, From: "client", Message: json.RawMessage(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`)},
		{Server: 0, Line: 3, TMS: 1, From: "server", Raw: "Listening on stdio"},
	}}

	oldPath := filepath.Join(t.TempDir(), "old.db")
	old, err := openWriter(ctx, oldPath, all[:3])
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		putSchema3(t, old, ep, lines[ep.ID])
	}
	old.Close()

	// Read without migrating, the old store is not half read: every read
	// of episodes asks for the upgrade, and the file stays as it was.
	before := snap(t, oldPath)
	ro, err := OpenReadOnly(ctx, oldPath)
	if err != nil {
		t.Fatal(err)
	}
	var oe *OlderSchemaError
	if _, err := ro.Sessions(ctx, episode.Filter{}); !errors.As(err, &oe) || oe.Store != 3 {
		t.Errorf("Sessions of a schema-3 store read as it is: %v, want an OlderSchemaError", err)
	}
	if err := ro.Episodes(ctx, episode.Filter{}, func(*episode.Episode) error { return nil }); !errors.As(err, &oe) {
		t.Errorf("Episodes of a schema-3 store read as it is: %v, want an OlderSchemaError", err)
	}
	ro.Close()
	checkSame(t, oldPath, before, "reading a schema-3 store")

	upgraded, err := Open(ctx, oldPath)
	if err != nil {
		t.Fatal(err)
	}
	defer upgraded.Close()

	fresh, _ := openTemp(t)
	if _, err := fresh.Put(ctx, Unit{Episodes: eps, Lines: lines}); err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		got, gs, err := upgraded.Episode(ctx, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, ws, err := fresh.Episode(ctx, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ep, got); diff != "" {
			t.Errorf("episode %s after the upgrade (-written +read):\n%s", ep.ID, diff)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("episode %s: upgraded differs from written today (-today +upgraded):\n%s", ep.ID, diff)
		}
		if diff := cmp.Diff(ws, gs); diff != "" {
			t.Errorf("session %s: upgraded differs from written today (-today +upgraded):\n%s", ep.ID, diff)
		}
	}
	if diff := cmp.Diff(wireRows(t, fresh), wireRows(t, upgraded)); diff != "" {
		t.Errorf("wire lines after the upgrade (-today +upgraded):\n%s", diff)
	}
	for _, table := range []string{"servers", "tools", "messages", "calls", "turns", "wire_lines"} {
		var a, b int
		if err := upgraded.r.QueryRow("SELECT count(*) FROM " + table).Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := fresh.r.QueryRow("SELECT count(*) FROM " + table).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if a != b || a == 0 {
			t.Errorf("%s: %d rows after the upgrade, %d written today", table, a, b)
		}
	}
}
