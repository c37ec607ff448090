package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
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

// Unit is what one host session's logs make: the episodes some files
// made, the lines they keep beside them, and the files themselves. Writing
// a unit replaces every episode those files made before. Units are written
// whole: a transaction holds whole units, never part of one.
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

	enc []encoded // by episode, from Encode
}

// encoded is what one episode's row holds beyond its metadata, encoded.
type encoded struct {
	doc, tools, wire string
	summary          Summary
	servers          string // the servers' names, joined by U+001F
}

// Encode encodes the unit's episodes as the store keeps them, so that the
// goroutines that read logs can do it while one writes: Put and PutAll
// encode a unit that was not. Encode the unit again after changing it.
// Once encoded, writing the unit needs of each episode only its own fields
// (ID, source, domain, …), not its servers, tools, events or turns, nor
// the unit's Lines: a caller that holds many units until they are written
// may let those go.
func (u *Unit) Encode() {
	u.enc = make([]encoded, len(u.Episodes))
	// The buffer documents are built in outlives the unit: grown anew for
	// each host session, it was a tenth of the cost of encoding one.
	bp := encodeBufs.Get().(*[]byte)
	buf := *bp
	defer func() {
		if cap(buf) <= maxKeptBuf { // an outsized episode's buffer is let go
			*bp = buf[:0]
			encodeBufs.Put(bp)
		}
	}()
	for i, ep := range u.Episodes {
		e := &u.enc[i]
		e.summary = Summarize(ep)
		names := make([]string, len(ep.Servers))
		for i, sv := range ep.Servers {
			names[i] = sv.Name
		}
		e.servers = strings.Join(names, "\x1f")
		buf = appendDoc(buf[:0], ep)
		e.doc = string(buf)
		if len(ep.Tools) > 0 {
			buf = appendTools(buf[:0], ep.Tools)
			e.tools = string(buf)
		}
		if lines := u.Lines[ep.ID]; len(lines) > 0 {
			buf = appendWire(buf[:0], lines)
			e.wire = string(buf)
		}
	}
}

// encodeBufs holds the buffers Encode builds documents in; each document
// is copied out of it into its own string.
var encodeBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxKeptBuf = 16 << 20

// Size is about how many bytes writing the unit adds to the store, once
// encoded: what a caller batching units into one transaction counts.
func (u *Unit) Size() int {
	if len(u.enc) != len(u.Episodes) {
		u.Encode()
	}
	n := 0
	for _, e := range u.enc {
		n += len(e.doc) + len(e.tools) + len(e.wire)
	}
	return n
}

// Put writes u in one transaction and reports whether it wrote anything:
// when every file of u is already recorded with the same size and content
// hash (another ingest got there first), it leaves the store as it is.
func (db *DB) Put(ctx context.Context, u Unit) (wrote bool, err error) {
	w, err := db.PutAll(ctx, []*Unit{&u})
	if err != nil {
		return false, err
	}
	return w[0], nil
}

// PutAll writes the units in one transaction, each as Put would, and
// reports which it wrote. A transaction per unit costs more than its rows
// when a unit is small (a short session), so ingest writes units in
// batches; a batch holds whole units, so an ingest cut short leaves whole
// host sessions in the store, whichever batch it was in.
func (db *DB) PutAll(ctx context.Context, units []*Unit) (wrote []bool, err error) {
	for _, u := range units {
		if len(u.enc) != len(u.Episodes) {
			u.Encode()
		}
	}
	// Statements run under a context without cancellation: the driver
	// starts a goroutine per statement to watch one that can be cancelled.
	// The transaction's own context is checked between units.
	sctx := context.WithoutCancel(ctx)
	err = db.writeTx(ctx, func(sx *sqlx.Tx) error {
		wrote = make([]bool, len(units))
		tx := &wtx{Tx: sx, stmts: map[string]*sqlx.Stmt{}, toolLists: map[string]int64{}}
		defer tx.close()
		now := time.Now().UnixMilli()
		for i, u := range units {
			if err := ctx.Err(); err != nil {
				return err
			}
			w, err := putUnit(sctx, tx, u, now)
			if err != nil {
				return err
			}
			wrote[i] = w
		}
		return nil
	})
	return wrote, err
}

func putUnit(ctx context.Context, tx *wtx, u *Unit, now int64) (bool, error) {
	same, err := filesRecorded(ctx, tx, u.Files)
	if err != nil {
		return false, err
	}
	if same {
		if same, err = flowFilesRecorded(ctx, tx, u.Files, u.FlowFiles); err != nil {
			return false, err
		}
	}
	if same && len(u.Files) > 0 && !u.Force {
		return false, nil
	}
	if err := deleteEpisodesOf(ctx, tx, u); err != nil {
		return false, err
	}
	derived := unitDerived(u)
	for i, ep := range u.Episodes {
		fl := u.Flows[ep.ID]
		if err := insertEpisode(ctx, tx, ep, &u.enc[i], fl, derived, now); err != nil {
			return false, fmt.Errorf("storing episode %s: %w", ep.ID, err)
		}
		if fl != nil {
			if err := insertFlow(ctx, tx, ep.ID, fl); err != nil {
				return false, fmt.Errorf("storing the flow log of episode %s: %w", ep.ID, err)
			}
		}
		for _, f := range u.Files {
			if f.Status != StatusIngested {
				continue
			}
			if err := tx.exec(ctx, "INSERT OR IGNORE INTO episode_files (episode_id, path) VALUES (?, ?)", ep.ID, f.Path); err != nil {
				return false, err
			}
		}
	}
	for _, f := range u.Files {
		if err := putFile(ctx, tx, f, now); err != nil {
			return false, fmt.Errorf("recording %s: %w", f.Path, err)
		}
		// The flow logs beside the unit's logs are those it holds now.
		if err := tx.exec(ctx, "DELETE FROM flow_files WHERE log_path = ?", f.Path); err != nil {
			return false, fmt.Errorf("recording the flow log of %s: %w", f.Path, err)
		}
	}
	for _, f := range u.FlowFiles {
		if err := putFlowFile(ctx, tx, f, now); err != nil {
			return false, fmt.Errorf("recording %s: %w", f.Path, err)
		}
	}
	if err := putProblems(ctx, tx, *u); err != nil {
		return false, err
	}
	return true, nil
}

// derived is what an episode's row says of its unit's files: every
// episode of a unit is linked to all of them.
type derived struct {
	bad     int    // distinct bad lines of the unit's logs and flow logs
	flowOff string // why the flow served nothing, from the flow logs' off lines
}

func unitDerived(u *Unit) derived {
	type at struct {
		path string
		line int
	}
	seen := make(map[at]bool, len(u.Problems))
	for _, p := range u.Problems {
		seen[at{p.Path, p.Line}] = true
	}
	var off []string
	for _, f := range u.FlowFiles {
		if f.OffReason != "" {
			off = append(off, f.OffReason)
		}
	}
	return derived{bad: len(seen), flowOff: strings.Join(off, "; ")}
}

// wtx is a write transaction that prepares each statement once, however
// many rows it inserts, and knows the tool lists it has looked up.
type wtx struct {
	*sqlx.Tx
	stmts     map[string]*sqlx.Stmt
	toolLists map[string]int64 // document → tool_lists.id
}

func (w *wtx) stmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	st, ok := w.stmts[query]
	if !ok {
		var err error
		if st, err = w.Tx.PreparexContext(ctx, query); err != nil {
			return nil, err
		}
		w.stmts[query] = st
	}
	return st, nil
}

func (w *wtx) exec(ctx context.Context, query string, args ...any) error {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

func (w *wtx) close() {
	for _, st := range w.stmts {
		st.Close()
	}
}

// toolList returns the id of the tool list doc, adding it when the store
// has none like it.
func (w *wtx) toolList(ctx context.Context, doc string) (int64, error) {
	if id, ok := w.toolLists[doc]; ok {
		return id, nil
	}
	st, err := w.stmt(ctx, "SELECT id FROM tool_lists WHERE doc = ?")
	if err != nil {
		return 0, err
	}
	var id int64
	err = st.GetContext(ctx, &id, doc)
	if err == sql.ErrNoRows {
		st, err = w.stmt(ctx, "INSERT INTO tool_lists (doc) VALUES (?) RETURNING id")
		if err == nil {
			err = st.GetContext(ctx, &id, doc)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("storing the tool list: %w", err)
	}
	w.toolLists[doc] = id
	return id, nil
}

// filesRecorded reports whether every file is recorded with its size, hash
// and status.
func filesRecorded(ctx context.Context, tx *wtx, files []LogFile) (bool, error) {
	st, err := tx.stmt(ctx, "SELECT size, sha256, status FROM log_files WHERE path = ?")
	if err != nil {
		return false, err
	}
	for _, f := range files {
		var have LogFile
		err := st.GetContext(ctx, &have, f.Path)
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

func deleteEpisodesOf(ctx context.Context, tx *wtx, u *Unit) error {
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

// nullText is s as a nullable column: NULL when empty.
func nullText(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func insertEpisode(ctx context.Context, tx *wtx, ep *episode.Episode, enc *encoded, fl *Flow, d derived, now int64) error {
	s := enc.summary
	var reward sql.NullFloat64
	if ep.Reward != nil {
		reward = sql.NullFloat64{Float64: *ep.Reward, Valid: true}
	}
	var toolList sql.NullInt64
	if enc.tools != "" {
		id, err := tx.toolList(ctx, enc.tools)
		if err != nil {
			return err
		}
		toolList = sql.NullInt64{Int64: id, Valid: true}
	}
	var runs, decisions int
	if fl != nil {
		runs, decisions = len(fl.Runs), len(fl.Decisions)
	}
	return tx.exec(ctx, `INSERT INTO episodes (id, source, domain, host_session, agent_model, client_name, task_id, trial, reward,
		started_unix_ms, duration_ms, n_turns, n_calls, n_reads, n_writes, n_errors, n_messages, ingested_unix_ms,
		server_names, n_runs, n_decisions, n_bad, flow_off, tool_list, doc, wire)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ep.ID, ep.Source, ep.Domain, ep.HostSession, ep.AgentModel, ep.ClientName, ep.TaskID, ep.Trial, reward,
		ep.Started.UnixMilli(), s.DurationMS, s.Turns, s.Calls, s.Reads, s.Writes, s.Errors, s.Messages, now,
		enc.servers, runs, decisions, d.bad, d.flowOff, toolList, enc.doc, nullText(enc.wire))
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
