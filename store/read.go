package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/mcplog"
)

var _ episode.Source = (*DB)(nil)

// Qualified reports whether the directory of logs dir holds a host session
// of several servers (see SetQualified).
func (db *DB) Qualified(ctx context.Context, dir string) (bool, error) {
	var q bool
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		err := tx.GetContext(ctx, &q, "SELECT qualified FROM dirs WHERE path = ?", dir)
		if err == sql.ErrNoRows {
			return nil
		}
		return err
	})
	return q, err
}

// Files returns the files recorded in directory dir, by path.
func (db *DB) Files(ctx context.Context, dir string) (map[string]LogFile, error) {
	out := map[string]LogFile{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		var fs []LogFile
		if err := tx.SelectContext(ctx, &fs, "SELECT path, dir, size, mtime_unix_ns, sha256, status, message, session, host_session, server_name, started_unix_ms, end_ms, lines, header FROM log_files WHERE dir = ?", dir); err != nil {
			return err
		}
		for _, f := range fs {
			out[f.Path] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the store's files: %w", err)
	}
	return out, nil
}

// EpisodeFiles returns, for each episode made from files in dir, the paths
// of those files.
func (db *DB) EpisodeFiles(ctx context.Context, dir string) (map[string][]string, error) {
	out := map[string][]string{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		rows, err := tx.QueryxContext(ctx, `SELECT ef.episode_id, ef.path FROM episode_files ef JOIN log_files lf ON lf.path = ef.path
			WHERE lf.dir = ? ORDER BY ef.episode_id, ef.path`, dir)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, p string
			if err := rows.Scan(&id, &p); err != nil {
				return err
			}
			out[id] = append(out[id], p)
		}
		return rows.Err()
	})
	return out, err
}

// Session is one row of the list of sessions: an episode's metadata and
// counts, without its events.
type Session struct {
	ID          string `json:"id"`
	Source      string `json:"source"`
	Domain      string `json:"domain"`
	HostSession string `json:"host_session"`
	// AgentModel is the model that drove the agent, nil (JSON null) when
	// unknown, as in the log header; ClientName the MCP client that spoke
	// to the server.
	AgentModel *string   `json:"agent_model"`
	ClientName string    `json:"client_name"`
	TaskID     string    `json:"task_id,omitempty"`
	Trial      int       `json:"trial"`
	Reward     *float64  `json:"reward"`
	Started    time.Time `json:"started"`
	DurationMS int64     `json:"duration_ms"`
	Servers    []string  `json:"servers"`
	Turns      int       `json:"llm_turns"`
	Calls      int       `json:"calls"`
	Reads      int       `json:"reads"`
	Writes     int       `json:"writes"`
	Errors     int       `json:"errors"`
	Messages   int       `json:"messages"`
	// Runs and Decisions count what the session's flow logs hold
	// (hoist-mcp --flow); zero without one.
	Runs      int `json:"runs"`
	Decisions int `json:"decisions"`
	// BadLines counts the lines of the session's logs (and flow logs) that
	// could not be read (hoist sessions --problems lists them).
	BadLines int `json:"bad_lines"`
	// FlowOff says why the proxy's flow served nothing in the session, or
	// is empty.
	FlowOff string `json:"flow_off,omitempty"`
}

type sessionRow struct {
	ID            string          `db:"id"`
	Source        string          `db:"source"`
	Domain        string          `db:"domain"`
	HostSession   string          `db:"host_session"`
	AgentModel    string          `db:"agent_model"`
	ClientName    string          `db:"client_name"`
	TaskID        string          `db:"task_id"`
	Trial         int             `db:"trial"`
	Reward        sql.NullFloat64 `db:"reward"`
	StartedUnixMS int64           `db:"started_unix_ms"`
	DurationMS    int64           `db:"duration_ms"`
	Turns         int             `db:"n_turns"`
	Calls         int             `db:"n_calls"`
	Reads         int             `db:"n_reads"`
	Writes        int             `db:"n_writes"`
	Errors        int             `db:"n_errors"`
	Messages      int             `db:"n_messages"`
	Servers       string          `db:"server_names"`
	Runs          int             `db:"n_runs"`
	Decisions     int             `db:"n_decisions"`
	BadLines      int             `db:"n_bad"`
	FlowOff       string          `db:"flow_off"`
}

func (r sessionRow) session() Session {
	s := Session{
		ID: r.ID, Source: r.Source, Domain: r.Domain, HostSession: r.HostSession, AgentModel: mcplog.StringOrNil(r.AgentModel), ClientName: r.ClientName,
		TaskID: r.TaskID, Trial: r.Trial, Started: time.UnixMilli(r.StartedUnixMS).UTC(), DurationMS: r.DurationMS,
		Turns: r.Turns, Calls: r.Calls, Reads: r.Reads, Writes: r.Writes, Errors: r.Errors, Messages: r.Messages,
		Runs: r.Runs, Decisions: r.Decisions, BadLines: r.BadLines, FlowOff: r.FlowOff, Servers: []string{},
	}
	if r.Reward.Valid {
		v := r.Reward.Float64
		s.Reward = &v
	}
	if r.Servers != "" {
		s.Servers = strings.Split(r.Servers, "\x1f")
	}
	return s
}

// where turns a filter into a WHERE clause over episodes e.
func where(f episode.Filter) (string, []any) {
	var conds []string
	var args []any
	if f.Domain != "" {
		conds = append(conds, "e.domain = ?")
		args = append(args, f.Domain)
	}
	if f.HostSession != "" {
		conds = append(conds, "e.host_session = ?")
		args = append(args, f.HostSession)
	}
	if !f.Since.IsZero() {
		conds = append(conds, "e.started_unix_ms >= ?")
		args = append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		conds = append(conds, "e.started_unix_ms < ?")
		args = append(args, f.Until.UnixMilli())
	}
	if len(f.IDs) > 0 {
		conds = append(conds, "e.id IN (?"+strings.Repeat(", ?", len(f.IDs)-1)+")")
		for _, id := range f.IDs {
			args = append(args, id)
		}
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

const sessionCols = `e.id, e.source, e.domain, e.host_session, e.agent_model, e.client_name, e.task_id, e.trial, e.reward, e.started_unix_ms,
	e.duration_ms, e.n_turns, e.n_calls, e.n_reads, e.n_writes, e.n_errors, e.n_messages, e.server_names, e.n_runs, e.n_decisions,
	e.n_bad, e.flow_off`

// scanTo returns the destinations of sessionCols in r.
func (r *sessionRow) scanTo() []any {
	return []any{&r.ID, &r.Source, &r.Domain, &r.HostSession, &r.AgentModel, &r.ClientName, &r.TaskID, &r.Trial, &r.Reward, &r.StartedUnixMS,
		&r.DurationMS, &r.Turns, &r.Calls, &r.Reads, &r.Writes, &r.Errors, &r.Messages, &r.Servers, &r.Runs, &r.Decisions,
		&r.BadLines, &r.FlowOff}
}

// filesOf selects the files of episode e: its session logs and the flow
// logs beside them.
const filesOf = `SELECT ef.path FROM episode_files ef WHERE ef.episode_id = e.id
	UNION SELECT ff.path FROM flow_files ff JOIN episode_files ef ON ff.log_path = ef.path WHERE ef.episode_id = e.id`

// Sessions lists the episodes f selects, in start order. Since is
// inclusive and Until exclusive.
func (db *DB) Sessions(ctx context.Context, f episode.Filter) ([]Session, error) {
	out := []Session{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		w, args := where(f)
		rows, err := tx.QueryContext(context.WithoutCancel(ctx), "SELECT "+sessionCols+" FROM episodes e"+w+" ORDER BY e.started_unix_ms, e.id", args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var r sessionRow
		dst := r.scanTo()
		for rows.Next() {
			if err := rows.Scan(dst...); err != nil {
				return err
			}
			out = append(out, r.session())
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return out, nil
}

// Episode returns one episode and its list row, or nil when the store has
// no episode of that id.
func (db *DB) Episode(ctx context.Context, id string) (*episode.Episode, *Session, error) {
	var ep *episode.Episode
	var s *Session
	err := db.stream(ctx, " WHERE e.id = ?", []any{id}, false, func(e *episode.Episode, ss Session, _ *Flow) error {
		ep, s = e, &ss
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading session %s: %w", id, err)
	}
	return ep, s, nil
}

// Episodes streams the episodes f selects, in start order, from one
// snapshot of the store. It implements episode.Source.
func (db *DB) Episodes(ctx context.Context, f episode.Filter, fn func(*episode.Episode) error) error {
	w, args := where(f)
	return db.stream(ctx, w, args, false, func(ep *episode.Episode, _ Session, _ *Flow) error { return fn(ep) })
}

// stream calls fn with each episode the WHERE clause w selects, in start
// order, from one read transaction: its list row, and with flows what its
// flow logs hold (nil without). Episodes are read one row each, as the
// cursor reaches them, so a stream holds one episode at a time whatever
// the store's size.
func (db *DB) stream(ctx context.Context, w string, args []any, flows bool, fn func(*episode.Episode, Session, *Flow) error) error {
	return db.readTx(ctx, func(tx *sqlx.Tx) error {
		rd := newReader(ctx, tx)
		defer rd.close()
		rows, err := tx.QueryContext(rd.ctx, "SELECT "+sessionCols+", e.tool_list, e.doc FROM episodes e"+w+" ORDER BY e.started_unix_ms, e.id", args...)
		if err != nil {
			return fmt.Errorf("reading episodes: %w", err)
		}
		defer rows.Close()
		var r sessionRow
		var toolList sql.NullInt64
		var doc sql.NullString
		dst := append(r.scanTo(), &toolList, &doc)
		for rows.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := rows.Scan(dst...); err != nil {
				return fmt.Errorf("reading episodes: %w", err)
			}
			ep, err := rd.episode(&r, toolList, doc)
			if err != nil {
				return fmt.Errorf("reading episode %s: %w", r.ID, err)
			}
			var fl *Flow
			if flows {
				if fl, err = rd.flow(r.ID, r.Runs+r.Decisions > 0); err != nil {
					return fmt.Errorf("reading episode %s: %w", r.ID, err)
				}
			}
			if err := fn(ep, r.session(), fl); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading episodes: %w", err)
		}
		return ctx.Err()
	})
}

// reader reads episodes in one read transaction: statements prepared once
// for every episode, and each tool list decoded once.
type reader struct {
	ctx   context.Context // the stream's, without cancellation: see PutAll
	tx    *sqlx.Tx
	stmts map[string]*sqlx.Stmt
	tools map[int64][]episode.Tool
}

func newReader(ctx context.Context, tx *sqlx.Tx) *reader {
	return &reader{ctx: context.WithoutCancel(ctx), tx: tx, stmts: map[string]*sqlx.Stmt{}, tools: map[int64][]episode.Tool{}}
}

func (rd *reader) stmt(query string) (*sqlx.Stmt, error) {
	st, ok := rd.stmts[query]
	if !ok {
		var err error
		if st, err = rd.tx.PreparexContext(rd.ctx, query); err != nil {
			return nil, err
		}
		rd.stmts[query] = st
	}
	return st, nil
}

func (rd *reader) close() {
	for _, st := range rd.stmts {
		st.Close()
	}
}

// toolList returns the tools of tool list id, decoded once per reader.
func (rd *reader) toolList(id int64) ([]episode.Tool, error) {
	if ts, ok := rd.tools[id]; ok {
		return ts, nil
	}
	st, err := rd.stmt("SELECT doc FROM tool_lists WHERE id = ?")
	if err != nil {
		return nil, err
	}
	var doc string
	if err := st.GetContext(rd.ctx, &doc, id); err != nil {
		return nil, fmt.Errorf("reading tool list %d: %w", id, err)
	}
	ts, err := decodeTools(doc)
	if err != nil {
		return nil, fmt.Errorf("reading tool list %d: %w", id, err)
	}
	rd.tools[id] = ts
	return ts, nil
}

// episode builds the episode of a row: its columns, its tool list and its
// document.
func (rd *reader) episode(r *sessionRow, toolList sql.NullInt64, doc sql.NullString) (*episode.Episode, error) {
	ep := &episode.Episode{
		ID: r.ID, Source: r.Source, Domain: r.Domain, HostSession: r.HostSession, AgentModel: r.AgentModel, ClientName: r.ClientName,
		TaskID: r.TaskID, Trial: r.Trial, Started: time.UnixMilli(r.StartedUnixMS).UTC(),
	}
	if r.Reward.Valid {
		v := r.Reward.Float64
		ep.Reward = &v
	}
	if toolList.Valid {
		ts, err := rd.toolList(toolList.Int64)
		if err != nil {
			return nil, err
		}
		// Each episode gets its own slice; the schemas' bytes are shared.
		ep.Tools = slices.Clone(ts)
	}
	if doc.Valid {
		if err := decodeDoc(doc.String, ep); err != nil {
			return nil, err
		}
	}
	return ep, nil
}

// Partition is one Hive partition of the export: a domain and a UTC day.
type Partition struct {
	Domain string
	Date   string // YYYY-MM-DD, UTC
}

// Partitions lists the (domain, day) pairs the store's episodes fall in,
// in order.
func (db *DB) Partitions(ctx context.Context) ([]Partition, error) {
	var out []Partition
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		return tx.SelectContext(ctx, &out, `SELECT DISTINCT domain AS domain, strftime('%Y-%m-%d', started_unix_ms / 1000, 'unixepoch') AS date
			FROM episodes ORDER BY 1, 2`)
	})
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	return out, nil
}

// EpisodesIn streams the episodes of one partition (the domain exactly,
// empty included) in start order, with each one's list row and what its
// flow logs hold.
func (db *DB) EpisodesIn(ctx context.Context, p Partition, fn func(*episode.Episode, Session, *Flow) error) error {
	day, err := time.Parse("2006-01-02", p.Date)
	if err != nil {
		return fmt.Errorf("partition date %q: %w", p.Date, err)
	}
	return db.stream(ctx, " WHERE e.domain = ? AND e.started_unix_ms >= ? AND e.started_unix_ms < ?",
		[]any{p.Domain, day.UnixMilli(), day.AddDate(0, 0, 1).UnixMilli()}, true, fn)
}

// FlowRows returns how many decisions and runs the store's flow logs hold,
// by table name: what the export needs of Counts, without reading every
// episode's document.
func (db *DB) FlowRows(ctx context.Context) (map[string]int64, error) {
	return db.count(ctx, "decisions", "runs")
}

// Counts returns the number of rows of each table and view the episodes
// are kept in, for checks. It reads every document, so it is slow on a
// large store.
func (db *DB) Counts(ctx context.Context) (map[string]int64, error) {
	return db.count(ctx, "episodes", "servers", "tools", "messages", "calls", "turns", "wire_lines", "log_files", "decisions", "runs", "flow_files", "tool_lists")
}

// count returns the number of rows of each table, in one read transaction.
func (db *DB) count(ctx context.Context, tables ...string) (map[string]int64, error) {
	out := map[string]int64{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		for _, t := range tables {
			var n int64
			if err := tx.GetContext(ctx, &n, "SELECT count(*) FROM "+t); err != nil {
				return err
			}
			out[t] = n
		}
		return nil
	})
	return out, err
}

// ListedTools returns the kinds and input contracts of the tools the
// servers of each domain listed in recorded sessions: domain → tool → kind
// and domain → tool → inputSchema, tool names without their server::
// prefix, the latest listing winning. τ²-bench results carry neither.
func (db *DB) ListedTools(ctx context.Context) (map[string]map[string]episode.Kind, map[string]map[string]json.RawMessage, error) {
	out := map[string]map[string]episode.Kind{}
	schemas := map[string]map[string]json.RawMessage{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		rd := newReader(ctx, tx)
		defer rd.close()
		rows, err := tx.QueryContext(rd.ctx, `SELECT domain, tool_list FROM episodes
			WHERE source = ? AND domain != '' AND tool_list IS NOT NULL ORDER BY started_unix_ms, id`, episode.SourceMCP)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d string
			var id int64
			if err := rows.Scan(&d, &id); err != nil {
				return err
			}
			ts, err := rd.toolList(id)
			if err != nil {
				return err
			}
			for _, t := range ts {
				name := t.Name
				if _, after, ok := strings.Cut(name, "::"); ok {
					name = after
				}
				if out[d] == nil {
					out[d] = map[string]episode.Kind{}
				}
				out[d][name] = t.Kind
				if t.InputSchema != nil {
					if schemas[d] == nil {
						schemas[d] = map[string]json.RawMessage{}
					}
					schemas[d][name] = t.InputSchema
				}
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the tools of recorded sessions: %w", err)
	}
	return out, schemas, nil
}

// SessionProblem is one problem of a session's files.
type SessionProblem struct {
	EpisodeID string `db:"episode_id" json:"session"`
	Problem
}

// Problems lists the problems of the files of the episodes f selects: by
// session, file and line.
func (db *DB) Problems(ctx context.Context, f episode.Filter) ([]SessionProblem, error) {
	out := []SessionProblem{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		w, args := where(f)
		q := `SELECT e.id AS episode_id, p.path, p.line_no, p.field, p.message FROM episodes e JOIN problems p ON p.path IN (` + filesOf + `)` + w +
			` ORDER BY e.started_unix_ms, e.id, p.path, p.line_no`
		return tx.SelectContext(ctx, &out, q, args...)
	})
	if err != nil {
		return nil, fmt.Errorf("listing problems: %w", err)
	}
	return out, nil
}

// BadSessions counts the episodes f selects that have bad lines.
func (db *DB) BadSessions(ctx context.Context, f episode.Filter) (int, error) {
	var n int
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		w, args := where(f)
		cond := " WHERE "
		if w != "" {
			cond = " AND "
		}
		return tx.GetContext(ctx, &n, `SELECT count(*) FROM episodes e`+w+cond+`e.n_bad > 0`, args...)
	})
	if err != nil {
		return 0, fmt.Errorf("counting sessions with bad lines: %w", err)
	}
	return n, nil
}
