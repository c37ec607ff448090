package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

	"github.com/jmoiron/sqlx"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
)

// FlowFile is what the store records of one flow log ingest has read
// (<session>.flow.jsonl beside the session log LogPath): enough to skip it
// when it is unchanged.
type FlowFile struct {
	Path        string `db:"path"`
	Dir         string `db:"dir"`
	LogPath     string `db:"log_path"`
	Size        int64  `db:"size"`
	MtimeUnixNS int64  `db:"mtime_unix_ns"`
	SHA256      string `db:"sha256"`
	Lines       int64  `db:"lines"`
	Malformed   int64  `db:"malformed"`
	// OffReason says why the flow served nothing in the session (its flow
	// log's off line), or is empty.
	OffReason string `db:"off_reason"`
}

// Decision is one decision line of a flow log (DESIGN.md, "Flow log"):
// the line parsed (mcplog.FlowDecision, whose fields and accessors it
// carries), where it was logged, and the line as logged, which export
// writes as it is.
type Decision struct {
	// Server is the index of the episode's server (log) whose flow log it
	// came from; Session that log's session id.
	Server  int
	Session string
	// Run is the index of the run it belongs to (the run line logged after
	// it); Index its position in that run.
	Run   int
	Index int
	// Line is its 1-based line in the flow log.
	Line int
	mcplog.FlowDecision
	// Raw is the line as logged; Put writes the parsed line's JSON when it
	// is empty.
	Raw string
}

// Run is one run line of a flow log: the run after one of the agent's
// calls, parsed (mcplog.FlowRun), where it was logged, and as logged.
type Run struct {
	Server  int
	Session string
	// Index is the run's position in its flow log; Line its 1-based line.
	Index int
	Line  int
	mcplog.FlowRun
	// Raw is the line as logged; Put writes the parsed line's JSON when it
	// is empty.
	Raw string
}

// OffersJSON returns the decision's offers as logged: the raw JSON of the
// line's offers member ("[]" for none), which export writes as it is.
func (d *Decision) OffersJSON() string { return member(d.Raw, "offers") }

// SitesJSON returns the run's sites as logged: the raw JSON of the line's
// sites member ("[]" for none).
func (r *Run) SitesJSON() string { return member(r.Raw, "sites") }

// FiniteLogPolicy returns the run's LogPolicy and whether it is finite: the
// logp_policy column is null when a decision of the run was impossible
// (a logp of −Inf, logged as null).
func (r *Run) FiniteLogPolicy() (float64, bool) {
	lp := r.LogPolicy()
	return lp, !math.IsInf(lp, 0) && !math.IsNaN(lp)
}

// Flow is what an episode's flow logs hold.
type Flow struct {
	Decisions []Decision
	Runs      []Run
}

// insertFlow writes an episode's flow-log lines. The columns beside raw
// (the site, the offers, what was taken, the rule, the counts of a run's
// sites) are derived from the parsed line, the JSON ones cut from the raw
// line as it was logged.
func insertFlow(ctx context.Context, tx *wtx, episodeID string, fl *Flow) error {
	const decSQL = `INSERT INTO decisions (episode_id, server_idx, run_idx, idx, session, line_no, site, n_offers, offers, greedy, taken,
		propensity, taken_tool, taken_args, rule_decider, rule_threshold, rule_epsilon, shadow, raw)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	const runSQL = `INSERT INTO runs (episode_id, server_idx, idx, session, line_no, call_tool, failed, max_lookups, fold,
		rule_decider, rule_threshold, rule_epsilon, n_decisions, n_lookups, sites, surprise, logp_policy, shadow, raw)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	for i := range fl.Decisions {
		d := &fl.Decisions[i]
		line, err := rawLine(d.Raw, &d.FlowDecision)
		if err != nil {
			return fmt.Errorf("decision at line %d: %w", d.Line, err)
		}
		var tool sql.NullString
		var args json.RawMessage
		if o := d.TakenOffer(); o != nil {
			tool, args = sql.NullString{String: o.Tool, Valid: true}, o.Args
		}
		rule := d.Rule
		if err := tx.exec(ctx, decSQL, episodeID, d.Server, d.Run, d.Index, d.Session, d.Line, d.Site, len(d.Offers), member(line, "offers"),
			d.Greedy, d.Taken, d.Propensity, tool, rawText(args), string(rule.Decider), rule.Threshold, rule.Epsilon, d.Shadow, line); err != nil {
			return fmt.Errorf("decision at line %d: %w", d.Line, err)
		}
	}
	for i := range fl.Runs {
		r := &fl.Runs[i]
		line, err := rawLine(r.Raw, &r.FlowRun)
		if err != nil {
			return fmt.Errorf("run at line %d: %w", r.Line, err)
		}
		decisions, lookups := r.Counts()
		var logp sql.NullFloat64
		logp.Float64, logp.Valid = r.FiniteLogPolicy()
		rule := r.Rule
		if err := tx.exec(ctx, runSQL, episodeID, r.Server, r.Index, r.Session, r.Line, r.Call, r.Failed, r.MaxLookups, r.Fold,
			string(rule.Decider), rule.Threshold, rule.Epsilon, decisions, lookups, member(line, "sites"), r.Surprise, logp, r.Shadow, line); err != nil {
			return fmt.Errorf("run at line %d: %w", r.Line, err)
		}
	}
	return nil
}

// rawLine returns the line as logged, or the JSON of the parsed one when
// there is none (a line made in memory).
func rawLine(raw string, parsed any) (string, error) {
	if raw != "" {
		return raw, nil
	}
	b, err := json.Marshal(parsed)
	if err != nil {
		return "", fmt.Errorf("encoding the line: %w", err)
	}
	return string(b), nil
}

// member returns the raw JSON of a line's array member name, "[]" when the
// line has none (or null): the offers and sites columns keep what was
// logged, byte for byte.
func member(line, name string) string {
	b := jsontext.StringBytes(line)
	if !jsontext.Valid(b) {
		return "[]"
	}
	if v, ok := jsontext.Lookup(b, name); ok && jsontext.Kind(v) == '[' {
		return string(v)
	}
	return "[]"
}

func putFlowFile(ctx context.Context, tx *wtx, f FlowFile, now int64) error {
	return tx.exec(ctx, `INSERT INTO flow_files (path, dir, log_path, size, mtime_unix_ns, sha256, lines, malformed, off_reason, ingested_unix_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (path) DO UPDATE SET dir = excluded.dir, log_path = excluded.log_path, size = excluded.size,
		mtime_unix_ns = excluded.mtime_unix_ns, sha256 = excluded.sha256, lines = excluded.lines, malformed = excluded.malformed,
		off_reason = excluded.off_reason, ingested_unix_ms = excluded.ingested_unix_ms`,
		f.Path, f.Dir, f.LogPath, f.Size, f.MtimeUnixNS, f.SHA256, f.Lines, f.Malformed, f.OffReason, now)
}

// flowFilesRecorded reports whether every flow file is recorded with its
// size and hash, and no other flow file is recorded for the unit's logs.
func flowFilesRecorded(ctx context.Context, tx *wtx, logs []LogFile, flows []FlowFile) (bool, error) {
	want := map[string]FlowFile{}
	for _, f := range flows {
		want[f.Path] = f
	}
	for _, l := range logs {
		var have []FlowFile
		if err := tx.SelectContext(ctx, &have, "SELECT path, size, sha256 FROM flow_files WHERE log_path = ?", l.Path); err != nil {
			return false, err
		}
		for _, h := range have {
			w, ok := want[h.Path]
			if !ok || w.Size != h.Size || w.SHA256 != h.SHA256 {
				return false, nil
			}
			delete(want, h.Path)
		}
	}
	return len(want) == 0, nil
}

// FlowFiles returns the flow logs recorded in directory dir, by path.
func (db *DB) FlowFiles(ctx context.Context, dir string) (map[string]FlowFile, error) {
	out := map[string]FlowFile{}
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		var fs []FlowFile
		if err := tx.SelectContext(ctx, &fs, "SELECT path, dir, log_path, size, mtime_unix_ns, sha256, lines, malformed, off_reason FROM flow_files WHERE dir = ?", dir); err != nil {
			return err
		}
		for _, f := range fs {
			out[f.Path] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the store's flow logs: %w", err)
	}
	return out, nil
}

// TouchFlows records the modification times of flow logs whose content is
// unchanged, so the next ingest skips them on size and time alone.
func (db *DB) TouchFlows(ctx context.Context, files []FlowFile) error {
	if len(files) == 0 {
		return nil
	}
	return db.writeTx(ctx, func(tx *sqlx.Tx) error {
		for _, f := range files {
			if _, err := tx.ExecContext(ctx, "UPDATE flow_files SET mtime_unix_ns = ? WHERE path = ? AND size = ? AND sha256 = ?",
				f.MtimeUnixNS, f.Path, f.Size, f.SHA256); err != nil {
				return err
			}
		}
		return nil
	})
}

type lineRow struct {
	Server  int    `db:"server_idx"`
	Session string `db:"session"`
	Run     int    `db:"run_idx"`
	Index   int    `db:"idx"`
	Line    int    `db:"line_no"`
	Raw     string `db:"raw"`
}

// parseRow parses a stored line, which ingest read with the same reader.
func parseRow(r lineRow, what string) (mcplog.FlowLine, error) {
	l, err := mcplog.ParseFlowLine([]byte(r.Raw))
	if err == nil && (what == mcplog.TypeDecision) != (l.Decision != nil) {
		err = fmt.Errorf("the stored line is not a %s", what)
	}
	if err != nil {
		return l, fmt.Errorf("%s at line %d of %s's flow log: %w", what, r.Line, r.Session, err)
	}
	return l, nil
}

// flow reads an episode's decisions and runs, in log order, each line
// parsed from its raw JSON; any says whether the episode's row counts any
// (without, nothing is asked of the store).
func (rd *reader) flow(episodeID string, any bool) (*Flow, error) {
	fl := &Flow{}
	if !any {
		return fl, nil
	}
	st, err := rd.stmt("SELECT server_idx, session, run_idx, idx, line_no, raw FROM decisions WHERE episode_id = ? ORDER BY server_idx, run_idx, idx")
	if err != nil {
		return nil, fmt.Errorf("reading decisions: %w", err)
	}
	var ds []lineRow
	if err := st.SelectContext(rd.ctx, &ds, episodeID); err != nil {
		return nil, fmt.Errorf("reading decisions: %w", err)
	}
	for _, r := range ds {
		l, err := parseRow(r, mcplog.TypeDecision)
		if err != nil {
			return nil, err
		}
		fl.Decisions = append(fl.Decisions, Decision{Server: r.Server, Session: r.Session, Run: r.Run, Index: r.Index, Line: r.Line, FlowDecision: *l.Decision, Raw: r.Raw})
	}
	if st, err = rd.stmt("SELECT server_idx, session, idx, line_no, raw FROM runs WHERE episode_id = ? ORDER BY server_idx, idx"); err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	var rs []lineRow
	if err := st.SelectContext(rd.ctx, &rs, episodeID); err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	for _, r := range rs {
		l, err := parseRow(r, mcplog.TypeRun)
		if err != nil {
			return nil, err
		}
		fl.Runs = append(fl.Runs, Run{Server: r.Server, Session: r.Session, Index: r.Index, Line: r.Line, FlowRun: *l.Run, Raw: r.Raw})
	}
	return fl, nil
}

// Flow returns the decisions and runs of one episode, in log order.
func (db *DB) Flow(ctx context.Context, episodeID string) (*Flow, error) {
	var fl *Flow
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		rd := newReader(ctx, tx)
		defer rd.close()
		var err error
		fl, err = rd.flow(episodeID, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the flow log of %s: %w", episodeID, err)
	}
	return fl, nil
}
