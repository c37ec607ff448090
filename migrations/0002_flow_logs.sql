-- The flow logs hoist-mcp --flow writes beside a session log
-- (<session>.flow.jsonl): one decision line per decision, then one run line
-- per run (DESIGN.md, "Flow log"). Each row belongs to the episode its
-- session log went into, and to that log's server (server_idx, as in
-- wire_lines), and keeps its line, raw, beside the parsed columns, so that
-- a run can be scored again and another rule's value estimated off-policy.
--
-- A run's decisions are the decision lines logged before its run line:
-- decisions.run_idx is the run line that follows them (a decision the log
-- ended before its run line has a run_idx no run has).

CREATE TABLE runs (
	episode_id      TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	server_idx      INTEGER NOT NULL,
	idx             INTEGER NOT NULL,           -- the run's position in its flow log, from 0
	session         TEXT NOT NULL DEFAULT '',   -- the session log's session id
	line_no         INTEGER NOT NULL,           -- 1-based line in the flow log
	call_tool       TEXT NOT NULL DEFAULT '',   -- the agent's call the run followed
	failed          INTEGER NOT NULL DEFAULT 0, -- whether that call failed
	max_lookups     INTEGER NOT NULL DEFAULT 0,
	fold            INTEGER NOT NULL DEFAULT 0,
	rule_decider    TEXT NOT NULL DEFAULT '',
	rule_threshold  REAL NOT NULL DEFAULT 0,
	rule_epsilon    REAL NOT NULL DEFAULT 0,
	n_decisions     INTEGER NOT NULL DEFAULT 0, -- decide# sites
	n_lookups       INTEGER NOT NULL DEFAULT 0, -- obs# sites: lookups answered
	sites           TEXT NOT NULL DEFAULT '[]', -- [[address, value, logp], …], raw JSON
	surprise        REAL NOT NULL DEFAULT 0,    -- nats
	logp_policy     REAL,                       -- Σ logp over decide# sites; NULL when one is null (−Inf)
	shadow          INTEGER NOT NULL DEFAULT 0,
	raw             TEXT NOT NULL,              -- the line as logged
	PRIMARY KEY (episode_id, server_idx, idx)
) STRICT;

CREATE TABLE decisions (
	episode_id      TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	server_idx      INTEGER NOT NULL,
	run_idx         INTEGER NOT NULL,           -- runs.idx of its run
	idx             INTEGER NOT NULL,           -- the decision's position in its run, from 0
	session         TEXT NOT NULL DEFAULT '',
	line_no         INTEGER NOT NULL,
	site            TEXT NOT NULL,              -- decide#N
	n_offers        INTEGER NOT NULL DEFAULT 0,
	offers          TEXT NOT NULL DEFAULT '[]', -- raw JSON
	greedy          INTEGER NOT NULL DEFAULT -1, -- an index into offers, -1 for stop
	taken           INTEGER NOT NULL DEFAULT -1,
	propensity      REAL NOT NULL DEFAULT 0,
	taken_tool      TEXT,                       -- NULL when the decision stopped
	taken_args      TEXT,                       -- raw JSON; NULL when it stopped
	rule_decider    TEXT NOT NULL DEFAULT '',
	rule_threshold  REAL NOT NULL DEFAULT 0,
	rule_epsilon    REAL NOT NULL DEFAULT 0,
	shadow          INTEGER NOT NULL DEFAULT 0,
	raw             TEXT NOT NULL,
	PRIMARY KEY (episode_id, server_idx, run_idx, idx)
) STRICT;

-- flow_files records every flow log ingest has read, as log_files does for
-- session logs, so that an unchanged one is skipped and one that grew is
-- read again with its session.
CREATE TABLE flow_files (
	path             TEXT PRIMARY KEY,
	dir              TEXT NOT NULL,
	log_path         TEXT NOT NULL,             -- the session log beside it
	size             INTEGER NOT NULL,
	mtime_unix_ns    INTEGER NOT NULL,
	sha256           TEXT NOT NULL,
	lines            INTEGER NOT NULL DEFAULT 0,
	malformed        INTEGER NOT NULL DEFAULT 0,
	ingested_unix_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX flow_files_dir ON flow_files (dir);
CREATE INDEX flow_files_log ON flow_files (log_path);
