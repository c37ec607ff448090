package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"
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
}

// Rule is the decision rule a flow was served with: the decider, the
// threshold and the exploration rate ε.
type Rule struct {
	Decider   string  `db:"rule_decider"`
	Threshold float64 `db:"rule_threshold"`
	Epsilon   float64 `db:"rule_epsilon"`
}

// Decision is one decision line of a flow log (DESIGN.md, "Flow log").
type Decision struct {
	// Server is the index of the episode's server (log) whose flow log it
	// came from; Session that log's session id.
	Server  int    `db:"server_idx"`
	Session string `db:"session"`
	// Run is the index of the run it belongs to (the run line logged after
	// it); Index its position in that run.
	Run   int `db:"run_idx"`
	Index int `db:"idx"`
	// Line is its 1-based line in the flow log.
	Line int    `db:"line_no"`
	Site string `db:"site"`
	// Offers are the lookups offered, raw JSON; NOffers how many.
	NOffers int             `db:"n_offers"`
	Offers  json.RawMessage `db:"offers"`
	// Greedy and Taken index Offers, or are -1 for stop.
	Greedy     int     `db:"greedy"`
	Taken      int     `db:"taken"`
	Propensity float64 `db:"propensity"`
	// TakenTool and TakenArgs are the offer taken; null when it stopped.
	TakenTool sql.NullString  `db:"taken_tool"`
	TakenArgs json.RawMessage `db:"taken_args"`
	Rule
	Shadow bool `db:"shadow"`
	// Raw is the line as logged.
	Raw string `db:"raw"`
}

// Run is one run line of a flow log: the run after one of the agent's
// calls, with its sites as [address, value, logp].
type Run struct {
	Server     int    `db:"server_idx"`
	Session    string `db:"session"`
	Index      int    `db:"idx"`
	Line       int    `db:"line_no"`
	CallTool   string `db:"call_tool"`
	Failed     bool   `db:"failed"`
	MaxLookups int    `db:"max_lookups"`
	Fold       int    `db:"fold"`
	Rule
	// NDecisions and NLookups count its decide# and obs# sites.
	NDecisions int             `db:"n_decisions"`
	NLookups   int             `db:"n_lookups"`
	Sites      json.RawMessage `db:"sites"`
	Surprise   float64         `db:"surprise"`
	// LogPolicy is Σ logp over the decision sites; null when one of them
	// is −Inf (logged as null).
	LogPolicy sql.NullFloat64 `db:"logp_policy"`
	Shadow    bool            `db:"shadow"`
	Raw       string          `db:"raw"`
}

// Flow is what an episode's flow logs hold.
type Flow struct {
	Decisions []Decision
	Runs      []Run
}

func insertFlow(ctx context.Context, tx *wtx, episodeID string, fl *Flow) error {
	const decSQL = `INSERT INTO decisions (episode_id, server_idx, run_idx, idx, session, line_no, site, n_offers, offers, greedy, taken,
		propensity, taken_tool, taken_args, rule_decider, rule_threshold, rule_epsilon, shadow, raw)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	const runSQL = `INSERT INTO runs (episode_id, server_idx, idx, session, line_no, call_tool, failed, max_lookups, fold,
		rule_decider, rule_threshold, rule_epsilon, n_decisions, n_lookups, sites, surprise, logp_policy, shadow, raw)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	for _, d := range fl.Decisions {
		offers := string(d.Offers)
		if offers == "" {
			offers = "[]"
		}
		if err := tx.exec(ctx, decSQL, episodeID, d.Server, d.Run, d.Index, d.Session, d.Line, d.Site, d.NOffers, offers,
			d.Greedy, d.Taken, d.Propensity, d.TakenTool, rawText(d.TakenArgs), d.Decider, d.Threshold, d.Epsilon, d.Shadow, d.Raw); err != nil {
			return fmt.Errorf("decision at line %d: %w", d.Line, err)
		}
	}
	for _, r := range fl.Runs {
		sites := string(r.Sites)
		if sites == "" {
			sites = "[]"
		}
		if err := tx.exec(ctx, runSQL, episodeID, r.Server, r.Index, r.Session, r.Line, r.CallTool, r.Failed, r.MaxLookups, r.Fold,
			r.Decider, r.Threshold, r.Epsilon, r.NDecisions, r.NLookups, sites, r.Surprise, r.LogPolicy, r.Shadow, r.Raw); err != nil {
			return fmt.Errorf("run at line %d: %w", r.Line, err)
		}
	}
	return nil
}

func putFlowFile(ctx context.Context, tx *wtx, f FlowFile, now int64) error {
	return tx.exec(ctx, `INSERT INTO flow_files (path, dir, log_path, size, mtime_unix_ns, sha256, lines, malformed, ingested_unix_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (path) DO UPDATE SET dir = excluded.dir, log_path = excluded.log_path, size = excluded.size,
		mtime_unix_ns = excluded.mtime_unix_ns, sha256 = excluded.sha256, lines = excluded.lines, malformed = excluded.malformed,
		ingested_unix_ms = excluded.ingested_unix_ms`,
		f.Path, f.Dir, f.LogPath, f.Size, f.MtimeUnixNS, f.SHA256, f.Lines, f.Malformed, now)
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
		if err := tx.SelectContext(ctx, &fs, "SELECT path, dir, log_path, size, mtime_unix_ns, sha256, lines, malformed FROM flow_files WHERE dir = ?", dir); err != nil {
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

const decisionCols = `server_idx, session, run_idx, idx, line_no, site, n_offers, offers, greedy, taken, propensity, taken_tool,
	taken_args, rule_decider, rule_threshold, rule_epsilon, shadow, raw`

const runCols = `server_idx, session, idx, line_no, call_tool, failed, max_lookups, fold, rule_decider, rule_threshold, rule_epsilon,
	n_decisions, n_lookups, sites, surprise, logp_policy, shadow, raw`

type decisionRow struct {
	Decision
	Offers    string         `db:"offers"`
	TakenArgs sql.NullString `db:"taken_args"`
}

type runRow struct {
	Run
	Sites string `db:"sites"`
}

// loadFlow reads an episode's decisions and runs, in log order.
func loadFlow(ctx context.Context, tx *sqlx.Tx, episodeID string) (*Flow, error) {
	fl := &Flow{}
	var ds []decisionRow
	if err := tx.SelectContext(ctx, &ds, "SELECT "+decisionCols+" FROM decisions WHERE episode_id = ? ORDER BY server_idx, run_idx, idx", episodeID); err != nil {
		return nil, fmt.Errorf("reading decisions: %w", err)
	}
	for _, r := range ds {
		d := r.Decision
		d.Offers = json.RawMessage(r.Offers)
		d.TakenArgs = raw(r.TakenArgs)
		fl.Decisions = append(fl.Decisions, d)
	}
	var rs []runRow
	if err := tx.SelectContext(ctx, &rs, "SELECT "+runCols+" FROM runs WHERE episode_id = ? ORDER BY server_idx, idx", episodeID); err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	for _, r := range rs {
		run := r.Run
		run.Sites = json.RawMessage(r.Sites)
		fl.Runs = append(fl.Runs, run)
	}
	return fl, nil
}

// Flow returns the decisions and runs of one episode, in log order.
func (db *DB) Flow(ctx context.Context, episodeID string) (*Flow, error) {
	var fl *Flow
	err := db.readTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		fl, err = loadFlow(ctx, tx, episodeID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the flow log of %s: %w", episodeID, err)
	}
	return fl, nil
}
