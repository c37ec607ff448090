package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/hoist-mcp/hoist/episode"
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
	// AgentModel is the model that drove the agent ("" when unknown);
	// ClientName the MCP client that spoke to the server.
	AgentModel string    `json:"agent_model"`
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
	Servers       sql.NullString  `db:"servers"`
	Runs          int             `db:"n_runs"`
	Decisions     int             `db:"n_decisions"`
	BadLines      int             `db:"n_bad"`
	FlowOff       sql.NullString  `db:"flow_off"`
}

func (r sessionRow) session() Session {
	s := Session{
		ID: r.ID, Source: r.Source, Domain: r.Domain, HostSession: r.HostSession, AgentModel: r.AgentModel, ClientName: r.ClientName,
		TaskID: r.TaskID, Trial: r.Trial, Started: time.UnixMilli(r.StartedUnixMS).UTC(), DurationMS: r.DurationMS,
		Turns: r.Turns, Calls: r.Calls, Reads: r.Reads, Writes: r.Writes, Errors: r.Errors, Messages: r.Messages,
		Runs: r.Runs, Decisions: r.Decisions, BadLines: r.BadLines, FlowOff: r.FlowOff.String, Servers: []string{},
	}
	if r.Reward.Valid {
		v := r.Reward.Float64
		s.Reward = &v
	}
	if r.Servers.Valid && r.Servers.String != "" {
		s.Servers = strings.Split(r.Servers.String, "\x1f")
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
	e.duration_ms, e.n_turns, e.n_calls, e.n_reads, e.n_writes, e.n_errors, e.n_messages,
	(SELECT group_concat(name, char(31)) FROM (SELECT name FROM servers s WHERE s.episode_id = e.id ORDER BY s.idx)) AS servers,
	(SELECT count(*) FROM runs r WHERE r.episode_id = e.id) AS n_runs,
	(SELECT count(*) FROM decisions d WHERE d.episode_id = e.id) AS n_decisions,
	(SELECT count(*) FROM problems p WHERE p.path IN (` + filesOf + `)) AS n_bad,
	(SELECT group_concat(ff.off_reason, '; ') FROM flow_files ff JOIN episode_files ef ON ff.log_path = ef.path
		WHERE ef.episode_id = e.id AND ff.off_reason != '') AS flow_off`

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
		var rows []sessionRow
		if err := tx.SelectContext(ctx, &rows, "SELECT "+sessionCols+" FROM episodes e"+w+" ORDER BY e.started_unix_ms, e.id", args...); err != nil {
			return err
		}
		for _, r := range rows {
			out = append(out, r.session())
		}
		return nil
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
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		var rows []sessionRow
		if err := tx.SelectContext(ctx, &rows, "SELECT "+sessionCols+" FROM episodes e WHERE e.id = ?", id); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ss := rows[0].session()
		s = &ss
		var err error
		ep, err = loadEpisode(ctx, tx, rows[0])
		return err
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
	return db.streamEpisodes(ctx, w, args, fn)
}

func (db *DB) streamEpisodes(ctx context.Context, w string, args []any, fn func(*episode.Episode) error) error {
	return db.readTx(ctx, func(tx *sqlx.Tx) error {
		var rows []sessionRow
		if err := tx.SelectContext(ctx, &rows, "SELECT "+sessionCols+" FROM episodes e"+w+" ORDER BY e.started_unix_ms, e.id", args...); err != nil {
			return fmt.Errorf("reading episodes: %w", err)
		}
		for _, r := range rows {
			if err := ctx.Err(); err != nil {
				return err
			}
			ep, err := loadEpisode(ctx, tx, r)
			if err != nil {
				return fmt.Errorf("reading episode %s: %w", r.ID, err)
			}
			if err := fn(ep); err != nil {
				return err
			}
		}
		return nil
	})
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
	return db.readTx(ctx, func(tx *sqlx.Tx) error {
		var rows []sessionRow
		if err := tx.SelectContext(ctx, &rows, "SELECT "+sessionCols+` FROM episodes e
			WHERE e.domain = ? AND e.started_unix_ms >= ? AND e.started_unix_ms < ? ORDER BY e.started_unix_ms, e.id`,
			p.Domain, day.UnixMilli(), day.AddDate(0, 0, 1).UnixMilli()); err != nil {
			return fmt.Errorf("reading episodes: %w", err)
		}
		for _, r := range rows {
			ep, err := loadEpisode(ctx, tx, r)
			if err != nil {
				return fmt.Errorf("reading episode %s: %w", r.ID, err)
			}
			fl, err := loadFlow(ctx, tx, r.ID)
			if err != nil {
				return fmt.Errorf("reading episode %s: %w", r.ID, err)
			}
			if err := fn(ep, r.session(), fl); err != nil {
				return err
			}
		}
		return nil
	})
}

// Counts returns the number of rows of each exported table, for checks.
func (db *DB) Counts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		for _, t := range []string{"episodes", "servers", "tools", "messages", "calls", "turns", "wire_lines", "log_files", "decisions", "runs", "flow_files"} {
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

type serverRow struct {
	Name    string         `db:"name"`
	Session string         `db:"session"`
	Path    string         `db:"path"`
	Command string         `db:"command"`
	Info    sql.NullString `db:"info"`
}

type toolRow struct {
	Name        string         `db:"name"`
	Server      string         `db:"server"`
	Kind        string         `db:"kind"`
	InputSchema sql.NullString `db:"input_schema"`
	Annotations sql.NullString `db:"annotations"`
}

type messageRow struct {
	Seq  int64  `db:"seq"`
	TMS  int64  `db:"t_ms"`
	Role string `db:"role"`
	Text string `db:"text"`
}

type callRow struct {
	Idx        int            `db:"idx"`
	Seq        int64          `db:"seq"`
	TMS        int64          `db:"t_ms"`
	RequestID  string         `db:"request_id"`
	Server     string         `db:"server"`
	Tool       string         `db:"tool"`
	Arguments  sql.NullString `db:"arguments"`
	Actor      string         `db:"actor"`
	Turn       int            `db:"turn"`
	Cancelled  bool           `db:"cancelled"`
	Unreadable bool           `db:"unreadable"`
	ResultSeq  sql.NullInt64  `db:"result_seq"`
	ResultTMS  sql.NullInt64  `db:"result_t_ms"`
	ResultText sql.NullString `db:"result_text"`
	IsError    bool           `db:"is_error"`
	ResultRaw  sql.NullString `db:"result_raw"`
}

type turnRow struct {
	Idx     int   `db:"idx"`
	StartMS int64 `db:"start_ms"`
	EndMS   int64 `db:"end_ms"`
}

func raw(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// loadEpisode rebuilds an episode from its rows: the events in their stored
// order (messages, calls and results share one sequence).
func loadEpisode(ctx context.Context, tx *sqlx.Tx, r sessionRow) (*episode.Episode, error) {
	ep := &episode.Episode{
		ID: r.ID, Source: r.Source, Domain: r.Domain, HostSession: r.HostSession, AgentModel: r.AgentModel, ClientName: r.ClientName,
		TaskID: r.TaskID, Trial: r.Trial, Started: time.UnixMilli(r.StartedUnixMS).UTC(),
	}
	if r.Reward.Valid {
		v := r.Reward.Float64
		ep.Reward = &v
	}
	var servers []serverRow
	if err := tx.SelectContext(ctx, &servers, "SELECT name, session, path, command, info FROM servers WHERE episode_id = ? ORDER BY idx", r.ID); err != nil {
		return nil, err
	}
	for _, s := range servers {
		sv := episode.Server{Name: s.Name, Session: s.Session, Path: s.Path, Info: raw(s.Info)}
		if err := json.Unmarshal([]byte(s.Command), &sv.Command); err != nil {
			return nil, fmt.Errorf("server command: %w", err)
		}
		ep.Servers = append(ep.Servers, sv)
	}
	var tools []toolRow
	if err := tx.SelectContext(ctx, &tools, "SELECT name, server, kind, input_schema, annotations FROM tools WHERE episode_id = ? ORDER BY idx", r.ID); err != nil {
		return nil, err
	}
	for _, t := range tools {
		ep.Tools = append(ep.Tools, episode.Tool{Name: t.Name, Server: t.Server, Kind: episode.Kind(t.Kind), InputSchema: raw(t.InputSchema), Annotations: raw(t.Annotations)})
	}
	type seqEvent struct {
		seq int64
		ev  episode.Event
	}
	var evs []seqEvent
	var msgs []messageRow
	if err := tx.SelectContext(ctx, &msgs, "SELECT seq, t_ms, role, text FROM messages WHERE episode_id = ? ORDER BY idx", r.ID); err != nil {
		return nil, err
	}
	for _, m := range msgs {
		evs = append(evs, seqEvent{m.Seq, episode.Event{Type: episode.EventMessage, TMS: m.TMS, Message: &episode.Message{Role: m.Role, Text: m.Text}}})
	}
	var calls []callRow
	if err := tx.SelectContext(ctx, &calls, `SELECT idx, seq, t_ms, request_id, server, tool, arguments, actor, turn, cancelled, unreadable,
		result_seq, result_t_ms, result_text, is_error, result_raw FROM calls WHERE episode_id = ? ORDER BY idx`, r.ID); err != nil {
		return nil, err
	}
	for _, c := range calls {
		call := &episode.Call{Index: c.Idx, ID: c.RequestID, Server: c.Server, Tool: c.Tool, Args: raw(c.Arguments),
			By: episode.Actor(c.Actor), Turn: c.Turn, Cancelled: c.Cancelled, Unreadable: c.Unreadable}
		evs = append(evs, seqEvent{c.Seq, episode.Event{Type: episode.EventCall, TMS: c.TMS, Call: call}})
		if c.ResultText.Valid {
			call.Result = &episode.Result{CallIndex: c.Idx, Text: c.ResultText.String, IsError: c.IsError, Raw: raw(c.ResultRaw)}
			if c.ResultSeq.Valid {
				evs = append(evs, seqEvent{c.ResultSeq.Int64, episode.Event{Type: episode.EventResult, TMS: c.ResultTMS.Int64, Result: call.Result}})
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].seq < evs[j].seq })
	ep.Events = make([]episode.Event, len(evs))
	for i := range evs {
		ep.Events[i] = evs[i].ev
	}
	var turns []turnRow
	if err := tx.SelectContext(ctx, &turns, "SELECT idx, start_ms, end_ms FROM turns WHERE episode_id = ? ORDER BY idx", r.ID); err != nil {
		return nil, err
	}
	for _, t := range turns {
		ep.Turns = append(ep.Turns, episode.Turn{Index: t.Idx, StartMS: t.StartMS, EndMS: t.EndMS})
	}
	for _, c := range calls {
		if c.Turn >= 0 && c.Turn < len(ep.Turns) {
			ep.Turns[c.Turn].Calls = append(ep.Turns[c.Turn].Calls, c.Idx)
		}
	}
	return ep, nil
}

// ListedTools returns the kinds and input contracts of the tools the
// servers of each domain listed in recorded sessions: domain → tool → kind
// and domain → tool → inputSchema, tool names without their server::
// prefix, the latest listing winning. τ²-bench results carry neither.
func (db *DB) ListedTools(ctx context.Context) (map[string]map[string]episode.Kind, map[string]map[string]json.RawMessage, error) {
	out := map[string]map[string]episode.Kind{}
	schemas := map[string]map[string]json.RawMessage{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		rows, err := tx.QueryxContext(ctx, `SELECT e.domain, t.name, t.kind, t.input_schema FROM tools t JOIN episodes e ON e.id = t.episode_id
			WHERE e.source = ? AND e.domain != '' ORDER BY e.started_unix_ms`, episode.SourceMCP)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d, name, kind string
			var schema sql.NullString
			if err := rows.Scan(&d, &name, &kind, &schema); err != nil {
				return err
			}
			if _, after, ok := strings.Cut(name, "::"); ok {
				name = after
			}
			if out[d] == nil {
				out[d] = map[string]episode.Kind{}
			}
			out[d][name] = episode.Kind(kind)
			if schema.Valid {
				if schemas[d] == nil {
					schemas[d] = map[string]json.RawMessage{}
				}
				schemas[d][name] = json.RawMessage(schema.String)
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
		return tx.GetContext(ctx, &n, `SELECT count(*) FROM episodes e`+w+cond+`EXISTS (SELECT 1 FROM problems p WHERE p.path IN (`+filesOf+`))`, args...)
	})
	if err != nil {
		return 0, fmt.Errorf("counting sessions with bad lines: %w", err)
	}
	return n, nil
}
