package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/hoist-mcp/hoist/episode"
)

// Status of a file ingest has looked at.
const (
	StatusIngested = "ingested"  // read into episodes
	StatusNotALog  = "not-a-log" // named and skipped: not a hoist-mcp session log
	StatusFailed   = "failed"    // could not be read (Message says why)
)

// LogFile is what the store records of one file ingest has read: enough to
// skip it when it is unchanged, and to group it with the other logs of its
// host session without reading it again.
type LogFile struct {
	Path          string `db:"path"`
	Dir           string `db:"dir"`
	Size          int64  `db:"size"`
	MtimeUnixNS   int64  `db:"mtime_unix_ns"`
	SHA256        string `db:"sha256"`
	Status        string `db:"status"`
	Message       string `db:"message"`
	Session       string `db:"session"`
	HostSession   string `db:"host_session"`
	ServerName    string `db:"server_name"`
	StartedUnixMS int64  `db:"started_unix_ms"`
	EndMS         int64  `db:"end_ms"`
	Lines         int64  `db:"lines"`
	// Header is the log's header line, raw.
	Header sql.NullString `db:"header"`
}

// WireLine is a log line an Episode does not model (initialize, tools/list,
// notifications, lines that were not JSON), kept so nothing is lost.
type WireLine struct {
	// Server is the index of the episode's server (log) it came from.
	Server int
	// Line is its 1-based line number in that log.
	Line int
	TMS  int64
	From string
	// Message is the line's JSON value, raw; Raw the text of a line that
	// was not JSON.
	Message json.RawMessage
	Raw     string
}

// Unit is what one ingest transaction writes: the episodes some files made,
// the lines they keep beside them, and the files themselves. Writing a unit
// replaces every episode those files made before.
type Unit struct {
	Episodes []*episode.Episode
	// Lines holds each episode's unmodelled wire lines, by episode id.
	Lines map[string][]WireLine
	Files []LogFile
	// Flows holds each episode's decisions and runs, by episode id, read
	// from the flow logs FlowFiles beside the unit's session logs.
	Flows     map[string]*Flow
	FlowFiles []FlowFile
	// Problems are the bad input met in the unit's files (session and flow
	// logs); they replace what the store kept of those files.
	Problems []Problem
	// Force writes the unit even when its files are recorded unchanged: the
	// files are regrouped, or their tools renamed.
	Force bool
}

// Put writes u in one transaction and reports whether it wrote anything:
// when every file of u is already recorded with the same size and content
// hash (another ingest got there first), it leaves the store as it is.
func (db *DB) Put(ctx context.Context, u Unit) (wrote bool, err error) {
	err = db.writeTx(ctx, func(sx *sqlx.Tx) error {
		wrote = false
		tx := &wtx{Tx: sx, stmts: map[string]*sqlx.Stmt{}}
		defer tx.close()
		same, err := filesRecorded(ctx, tx, u.Files)
		if err != nil {
			return err
		}
		if same {
			if same, err = flowFilesRecorded(ctx, tx, u.Files, u.FlowFiles); err != nil {
				return err
			}
		}
		if same && len(u.Files) > 0 && !u.Force {
			return nil
		}
		if err := deleteEpisodesOf(ctx, tx, u); err != nil {
			return err
		}
		now := time.Now().UnixMilli()
		for _, ep := range u.Episodes {
			if err := insertEpisode(ctx, tx, ep, u.Lines[ep.ID], now); err != nil {
				return fmt.Errorf("storing episode %s: %w", ep.ID, err)
			}
			if fl := u.Flows[ep.ID]; fl != nil {
				if err := insertFlow(ctx, tx, ep.ID, fl); err != nil {
					return fmt.Errorf("storing the flow log of episode %s: %w", ep.ID, err)
				}
			}
			for _, f := range u.Files {
				if f.Status != StatusIngested {
					continue
				}
				if err := tx.exec(ctx, "INSERT OR IGNORE INTO episode_files (episode_id, path) VALUES (?, ?)", ep.ID, f.Path); err != nil {
					return err
				}
			}
		}
		for _, f := range u.Files {
			if err := putFile(ctx, tx, f, now); err != nil {
				return fmt.Errorf("recording %s: %w", f.Path, err)
			}
			// The flow logs beside the unit's logs are those it holds now.
			if err := tx.exec(ctx, "DELETE FROM flow_files WHERE log_path = ?", f.Path); err != nil {
				return fmt.Errorf("recording the flow log of %s: %w", f.Path, err)
			}
		}
		for _, f := range u.FlowFiles {
			if err := putFlowFile(ctx, tx, f, now); err != nil {
				return fmt.Errorf("recording %s: %w", f.Path, err)
			}
		}
		if err := putProblems(ctx, tx, u); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote, err
}

// wtx is a write transaction that prepares each statement once, however
// many rows it inserts (a session has hundreds of turns and calls).
type wtx struct {
	*sqlx.Tx
	stmts map[string]*sqlx.Stmt
}

func (w *wtx) exec(ctx context.Context, query string, args ...any) error {
	st, ok := w.stmts[query]
	if !ok {
		var err error
		if st, err = w.Tx.PreparexContext(ctx, query); err != nil {
			return err
		}
		w.stmts[query] = st
	}
	_, err := st.ExecContext(ctx, args...)
	return err
}

func (w *wtx) close() {
	for _, st := range w.stmts {
		st.Close()
	}
}

// filesRecorded reports whether every file is recorded with its size, hash
// and status.
func filesRecorded(ctx context.Context, tx *wtx, files []LogFile) (bool, error) {
	for _, f := range files {
		var have LogFile
		err := tx.GetContext(ctx, &have, "SELECT size, sha256, status FROM log_files WHERE path = ?", f.Path)
		if err == sql.ErrNoRows {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if have.Size != f.Size || have.SHA256 != f.SHA256 || have.Status != f.Status {
			return false, nil
		}
	}
	return true, nil
}

func deleteEpisodesOf(ctx context.Context, tx *wtx, u Unit) error {
	for _, f := range u.Files {
		if err := tx.exec(ctx, "DELETE FROM episodes WHERE id IN (SELECT episode_id FROM episode_files WHERE path = ?)", f.Path); err != nil {
			return fmt.Errorf("replacing the episodes of %s: %w", f.Path, err)
		}
	}
	for _, ep := range u.Episodes {
		if err := tx.exec(ctx, "DELETE FROM episodes WHERE id = ?", ep.ID); err != nil {
			return fmt.Errorf("replacing episode %s: %w", ep.ID, err)
		}
	}
	return nil
}

func putFile(ctx context.Context, tx *wtx, f LogFile, now int64) error {
	err := tx.exec(ctx, `INSERT INTO log_files (path, dir, size, mtime_unix_ns, sha256, status, message, session, host_session,
		server_name, started_unix_ms, end_ms, lines, header, ingested_unix_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (path) DO UPDATE SET dir = excluded.dir, size = excluded.size, mtime_unix_ns = excluded.mtime_unix_ns,
		sha256 = excluded.sha256, status = excluded.status, message = excluded.message, session = excluded.session,
		host_session = excluded.host_session, server_name = excluded.server_name, started_unix_ms = excluded.started_unix_ms,
		end_ms = excluded.end_ms, lines = excluded.lines, header = excluded.header, ingested_unix_ms = excluded.ingested_unix_ms`,
		f.Path, f.Dir, f.Size, f.MtimeUnixNS, f.SHA256, f.Status, f.Message, f.Session, f.HostSession,
		f.ServerName, f.StartedUnixMS, f.EndMS, f.Lines, f.Header, now)
	return err
}

// rawText returns raw JSON as a nullable text column.
func rawText(b json.RawMessage) sql.NullString {
	if len(b) == 0 {
		return sql.NullString{}
	}
	return sql.NullString{String: string(b), Valid: true}
}

func insertEpisode(ctx context.Context, tx *wtx, ep *episode.Episode, lines []WireLine, now int64) error {
	s := Summarize(ep)
	var reward sql.NullFloat64
	if ep.Reward != nil {
		reward = sql.NullFloat64{Float64: *ep.Reward, Valid: true}
	}
	if err := tx.exec(ctx, `INSERT INTO episodes (id, source, domain, host_session, agent_model, client_name, task_id, trial, reward,
		started_unix_ms, duration_ms, n_turns, n_calls, n_reads, n_writes, n_errors, n_messages, ingested_unix_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ep.ID, ep.Source, ep.Domain, ep.HostSession, ep.AgentModel, ep.ClientName, ep.TaskID, ep.Trial, reward,
		ep.Started.UnixMilli(), s.DurationMS, s.Turns, s.Calls, s.Reads, s.Writes, s.Errors, s.Messages, now); err != nil {
		return err
	}
	for i, sv := range ep.Servers {
		cmd, err := json.Marshal(sv.Command)
		if err != nil {
			return err
		}
		if sv.Command == nil {
			cmd = []byte("[]")
		}
		if err := tx.exec(ctx, "INSERT INTO servers (episode_id, idx, name, session, path, command, info) VALUES (?, ?, ?, ?, ?, ?, ?)",
			ep.ID, i, sv.Name, sv.Session, sv.Path, string(cmd), rawText(sv.Info)); err != nil {
			return fmt.Errorf("server %d: %w", i, err)
		}
	}
	for i, t := range ep.Tools {
		if err := tx.exec(ctx, "INSERT INTO tools (episode_id, idx, name, server, kind, input_schema, annotations) VALUES (?, ?, ?, ?, ?, ?, ?)",
			ep.ID, i, t.Name, t.Server, kindOr(t.Kind), rawText(t.InputSchema), rawText(t.Annotations)); err != nil {
			return fmt.Errorf("tool %s: %w", t.Name, err)
		}
	}
	const msgSQL = "INSERT INTO messages (episode_id, idx, seq, t_ms, role, text) VALUES (?, ?, ?, ?, ?, ?)"
	const callSQL = `INSERT INTO calls (episode_id, idx, seq, t_ms, request_id, server, tool, kind, arguments, actor, turn,
		cancelled, unreadable, result_seq, result_t_ms, result_text, is_error, result_raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// A result is stored on its call's row, with its own place in the order.
	type at struct{ seq, tms int64 }
	results := map[int]at{}
	for i, ev := range ep.Events {
		if ev.Type == episode.EventResult && ev.Result != nil {
			if _, ok := results[ev.Result.CallIndex]; !ok {
				results[ev.Result.CallIndex] = at{int64(i), ev.TMS}
			}
		}
	}
	nMsg := 0
	for i, ev := range ep.Events {
		switch {
		case ev.Type == episode.EventMessage && ev.Message != nil:
			if err := tx.exec(ctx, msgSQL, ep.ID, nMsg, i, ev.TMS, ev.Message.Role, ev.Message.Text); err != nil {
				return fmt.Errorf("message %d: %w", nMsg, err)
			}
			nMsg++
		case ev.Type == episode.EventCall && ev.Call != nil:
			c := ev.Call
			kind := episode.Generic
			if t := ep.Tool(c.Tool); t != nil {
				kind = kindOr(t.Kind)
			}
			var rseq, rtms sql.NullInt64
			var rtext, rraw sql.NullString
			isErr := false
			if r := c.Result; r != nil {
				if a, ok := results[c.Index]; ok {
					rseq = sql.NullInt64{Int64: a.seq, Valid: true}
					rtms = sql.NullInt64{Int64: a.tms, Valid: true}
				}
				rtext = sql.NullString{String: r.Text, Valid: true}
				rraw = rawText(r.Raw)
				isErr = r.IsError
			}
			if err := tx.exec(ctx, callSQL, ep.ID, c.Index, i, ev.TMS, c.ID, c.Server, c.Tool, kind, rawText(c.Args), string(c.By), c.Turn,
				c.Cancelled, c.Unreadable, rseq, rtms, rtext, isErr, rraw); err != nil {
				return fmt.Errorf("call %d: %w", c.Index, err)
			}
		}
	}
	for _, t := range ep.Turns {
		if err := tx.exec(ctx, "INSERT INTO turns (episode_id, idx, start_ms, end_ms, n_calls) VALUES (?, ?, ?, ?, ?)",
			ep.ID, t.Index, t.StartMS, t.EndMS, len(t.Calls)); err != nil {
			return fmt.Errorf("turn %d: %w", t.Index, err)
		}
	}
	if len(lines) > 0 {
		const wireSQL = "INSERT OR REPLACE INTO wire_lines (episode_id, server_idx, line_no, t_ms, sender, message, raw) VALUES (?, ?, ?, ?, ?, ?, ?)"
		for _, l := range lines {
			var raw sql.NullString
			if l.Message == nil {
				raw = sql.NullString{String: l.Raw, Valid: true}
			}
			if err := tx.exec(ctx, wireSQL, ep.ID, l.Server, l.Line, l.TMS, l.From, rawText(l.Message), raw); err != nil {
				return fmt.Errorf("wire line %d: %w", l.Line, err)
			}
		}
	}
	return nil
}

func kindOr(k episode.Kind) episode.Kind {
	if k == "" {
		return episode.Generic
	}
	return k
}

// Summary is what a list of sessions shows of one episode.
type Summary struct {
	DurationMS int64
	Turns      int
	Calls      int
	Reads      int
	Writes     int
	Errors     int
	Messages   int
}

// Summarize counts an episode's turns, calls (by the kind of their tool),
// error results and messages, and its duration: its last event's time.
func Summarize(ep *episode.Episode) Summary {
	s := Summary{Turns: len(ep.Turns)}
	for _, ev := range ep.Events {
		s.DurationMS = max(s.DurationMS, ev.TMS)
		switch {
		case ev.Message != nil:
			s.Messages++
		case ev.Call != nil:
			s.Calls++
			if t := ep.Tool(ev.Call.Tool); t != nil {
				switch t.Kind {
				case episode.Read:
					s.Reads++
				case episode.Write:
					s.Writes++
				}
			}
			if r := ev.Call.Result; r != nil && r.IsError {
				s.Errors++
			}
		}
	}
	for _, t := range ep.Turns {
		s.DurationMS = max(s.DurationMS, t.EndMS)
	}
	return s
}

// SetQualified records that the directory of logs dir holds a host session
// of several servers, so its tools are named server::tool from now on.
func (db *DB) SetQualified(ctx context.Context, dir string) error {
	return db.writeTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO dirs (path, qualified) VALUES (?, 1) ON CONFLICT (path) DO UPDATE SET qualified = 1", dir)
		return err
	})
}

// Touch records the modification times of files whose content is
// unchanged (same size and hash), so the next ingest skips them on size and
// time alone.
func (db *DB) Touch(ctx context.Context, files []LogFile) error {
	if len(files) == 0 {
		return nil
	}
	return db.writeTx(ctx, func(tx *sqlx.Tx) error {
		for _, f := range files {
			if _, err := tx.ExecContext(ctx, "UPDATE log_files SET mtime_unix_ns = ? WHERE path = ? AND size = ? AND sha256 = ?",
				f.MtimeUnixNS, f.Path, f.Size, f.SHA256); err != nil {
				return err
			}
		}
		return nil
	})
}

// Problem is one piece of bad input in a file: a line that could not be
// read, and why.
type Problem struct {
	Path string `db:"path"`
	// Line is the 1-based line, 0 for the file as a whole.
	Line    int    `db:"line_no"`
	Field   string `db:"field"`
	Message string `db:"message"`
}

// putProblems replaces the problems of the unit's files with u.Problems.
func putProblems(ctx context.Context, tx *wtx, u Unit) error {
	for _, f := range u.Files {
		if err := tx.exec(ctx, "DELETE FROM problems WHERE path = ?", f.Path); err != nil {
			return fmt.Errorf("recording the problems of %s: %w", f.Path, err)
		}
	}
	for _, f := range u.FlowFiles {
		if err := tx.exec(ctx, "DELETE FROM problems WHERE path = ?", f.Path); err != nil {
			return fmt.Errorf("recording the problems of %s: %w", f.Path, err)
		}
	}
	for _, p := range u.Problems {
		if err := tx.exec(ctx, "INSERT OR REPLACE INTO problems (path, line_no, field, message) VALUES (?, ?, ?, ?)",
			p.Path, p.Line, p.Field, p.Message); err != nil {
			return fmt.Errorf("recording the problems of %s: %w", p.Path, err)
		}
	}
	return nil
}

// Skip records files ingest named and skipped (not session logs, or logs it
// could not read: Status and Message say which), so that the next ingest
// skips them without naming them again while they are unchanged.
func (db *DB) Skip(ctx context.Context, files []LogFile) error {
	if len(files) == 0 {
		return nil
	}
	return db.writeTx(ctx, func(sx *sqlx.Tx) error {
		tx := &wtx{Tx: sx, stmts: map[string]*sqlx.Stmt{}}
		defer tx.close()
		now := time.Now().UnixMilli()
		for _, f := range files {
			if err := putFile(ctx, tx, f, now); err != nil {
				return fmt.Errorf("recording %s: %w", f.Path, err)
			}
		}
		return nil
	})
}
