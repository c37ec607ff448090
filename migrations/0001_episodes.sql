-- The episode store: one row per episode (a host session, or a τ²-bench
-- simulation) and its servers, tools, messages, calls and turns, plus the
-- log files ingest has read, so that a second ingest skips what it knows.
-- Raw JSON is kept beside the parsed columns, and the wire lines an episode
-- does not model are kept in wire_lines, so nothing in a log is lost.

CREATE TABLE episodes (
	id              TEXT PRIMARY KEY,
	source          TEXT NOT NULL,            -- mcp | tau2
	domain          TEXT NOT NULL DEFAULT '',
	host_session    TEXT NOT NULL DEFAULT '',
	agent_model     TEXT NOT NULL DEFAULT '',
	task_id         TEXT NOT NULL DEFAULT '',
	trial           INTEGER NOT NULL DEFAULT 0,
	reward          REAL,                     -- NULL when unknown
	started_unix_ms INTEGER NOT NULL,
	duration_ms     INTEGER NOT NULL DEFAULT 0,
	n_turns         INTEGER NOT NULL DEFAULT 0,
	n_calls         INTEGER NOT NULL DEFAULT 0,
	n_reads         INTEGER NOT NULL DEFAULT 0,
	n_writes        INTEGER NOT NULL DEFAULT 0,
	n_errors        INTEGER NOT NULL DEFAULT 0,
	n_messages      INTEGER NOT NULL DEFAULT 0,
	ingested_unix_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX episodes_started ON episodes (started_unix_ms);
CREATE INDEX episodes_domain ON episodes (domain, started_unix_ms);
CREATE INDEX episodes_host_session ON episodes (host_session);

CREATE TABLE servers (
	episode_id TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	idx        INTEGER NOT NULL,
	name       TEXT NOT NULL DEFAULT '',
	session    TEXT NOT NULL DEFAULT '',
	path       TEXT NOT NULL DEFAULT '',
	command    TEXT NOT NULL DEFAULT '[]',  -- JSON array
	info       TEXT,                        -- initialize's serverInfo, raw JSON
	PRIMARY KEY (episode_id, idx)
) STRICT;

CREATE TABLE tools (
	episode_id   TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	idx          INTEGER NOT NULL,
	name         TEXT NOT NULL,
	server       TEXT NOT NULL DEFAULT '',
	kind         TEXT NOT NULL,             -- read | write | generic
	input_schema TEXT,                      -- raw JSON
	annotations  TEXT,                      -- raw JSON
	PRIMARY KEY (episode_id, idx)
) STRICT;

-- seq is the event's position in the episode; messages, calls and results
-- (the result columns of calls) share it, so the events can be rebuilt in
-- order.
CREATE TABLE messages (
	episode_id TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	idx        INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	t_ms       INTEGER NOT NULL,
	role       TEXT NOT NULL,
	text       TEXT NOT NULL,
	PRIMARY KEY (episode_id, idx)
) STRICT;

CREATE TABLE calls (
	episode_id  TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	idx         INTEGER NOT NULL,
	seq         INTEGER NOT NULL,
	t_ms        INTEGER NOT NULL,
	request_id  TEXT NOT NULL DEFAULT '',   -- the JSON-RPC id as sent, raw JSON text
	server      TEXT NOT NULL DEFAULT '',
	tool        TEXT NOT NULL,
	kind        TEXT NOT NULL DEFAULT 'generic',
	arguments   TEXT,                       -- raw JSON
	actor       TEXT NOT NULL,              -- agent | proxy
	turn        INTEGER NOT NULL,
	cancelled   INTEGER NOT NULL DEFAULT 0,
	result_seq  INTEGER,                    -- NULL when never answered
	result_t_ms INTEGER,
	result_text TEXT,
	is_error    INTEGER NOT NULL DEFAULT 0,
	result_raw  TEXT,                       -- the response as sent, raw JSON
	PRIMARY KEY (episode_id, idx)
) STRICT;

CREATE INDEX calls_tool ON calls (tool);

CREATE TABLE turns (
	episode_id TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	idx        INTEGER NOT NULL,
	start_ms   INTEGER NOT NULL,
	end_ms     INTEGER NOT NULL,
	n_calls    INTEGER NOT NULL,
	PRIMARY KEY (episode_id, idx)
) STRICT;

-- wire_lines keeps every log line the episode does not model (initialize,
-- tools/list, notifications, other methods, lines that were not JSON), with
-- the server (log) it came from.
CREATE TABLE wire_lines (
	episode_id TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	server_idx INTEGER NOT NULL,
	line_no    INTEGER NOT NULL,            -- 1-based line in its log
	t_ms       INTEGER NOT NULL,
	sender     TEXT NOT NULL,               -- the log's "from"
	message    TEXT,                        -- raw JSON
	raw        TEXT,                        -- the line as text, when not JSON
	PRIMARY KEY (episode_id, server_idx, line_no)
) STRICT;

-- log_files records every file ingest has looked at, keyed by path, so that
-- an unchanged file (same size and content hash) is skipped.
CREATE TABLE log_files (
	path            TEXT PRIMARY KEY,
	dir             TEXT NOT NULL,
	size            INTEGER NOT NULL,
	mtime_unix_ns   INTEGER NOT NULL,
	sha256          TEXT NOT NULL,
	status          TEXT NOT NULL,          -- ingested | not-a-log | failed
	message         TEXT NOT NULL DEFAULT '',
	session         TEXT NOT NULL DEFAULT '',
	host_session    TEXT NOT NULL DEFAULT '',
	server_name     TEXT NOT NULL DEFAULT '',
	started_unix_ms INTEGER NOT NULL DEFAULT 0,
	end_ms          INTEGER NOT NULL DEFAULT 0,  -- the last line's t_ms
	lines           INTEGER NOT NULL DEFAULT 0,
	header          TEXT,                   -- the header line, raw JSON
	ingested_unix_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX log_files_dir ON log_files (dir);

-- episode_files links each episode to the files it was read from (the logs
-- of a host session, or one τ²-bench results file), so that re-reading a
-- file replaces exactly the episodes it made.
CREATE TABLE episode_files (
	episode_id TEXT NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
	path       TEXT NOT NULL,
	PRIMARY KEY (episode_id, path)
) STRICT;

CREATE INDEX episode_files_path ON episode_files (path);

-- dirs remembers, per directory of logs, whether it holds a host session of
-- several servers: from then on every tool in it is named server::tool
-- (hoist-mcp manual, "Several servers").
CREATE TABLE dirs (
	path      TEXT PRIMARY KEY,
	qualified INTEGER NOT NULL DEFAULT 0
) STRICT;
