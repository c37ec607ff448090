-- Each episode's servers, conversation, calls with their results, and turns
-- move from one row each in five tables into one JSON document on the
-- episode's row (issue 13, points 1 and 2). Reading an episode was one
-- query per table and, through the driver, a C call per column of every
-- row: a τ²-bench episode of 42 rows cost about 80 µs before it was built,
-- whatever the queries. One document is one value to read and one to
-- write, and the row-per-item tables become views of the same names and
-- columns, so SQL over them still works.
--
-- The document (episodes.doc) is an object of arrays, one array per row,
-- in the column order the views name:
--
--   {"servers":  [[name, session, path, command, info], …],
--    "messages": [[seq, t_ms, role, text], …],
--    "calls":    [[seq, t_ms, request_id, server, tool, kind, arguments, actor, turn,
--                  cancelled, unreadable, result_seq, result_t_ms, result_text, is_error, result], …],
--    "turns":    [[start_ms, end_ms, n_calls], …]}
--
-- An item's index is its position in its array. command, info, arguments
-- and result are the JSON as it was sent, byte for byte; result_seq,
-- result_t_ms and result_text are null for a call never answered.
--
-- The tools a session's servers listed repeat across sessions (a
-- τ²-bench domain lists the same sixteen schemas in every simulation), so
-- each distinct list is kept once, in tool_lists, and episodes.tool_list
-- names it. The wire lines an episode does not model (episodes.wire) are
-- read only by SQL, so they are a column of their own, after doc: a read
-- of doc never touches their pages.
--
-- The counts hoist sessions shows (runs, decisions, bad lines), the
-- servers' names and why a flow served nothing are stored on the row when
-- it is written, instead of counted from other tables on every read.

CREATE TABLE tool_lists (
	id  INTEGER PRIMARY KEY,
	doc TEXT NOT NULL UNIQUE -- [[name, server, kind, input_schema, annotations], …]
) STRICT;

ALTER TABLE episodes ADD COLUMN server_names TEXT NOT NULL DEFAULT ''; -- the servers' names, joined by U+001F
ALTER TABLE episodes ADD COLUMN n_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE episodes ADD COLUMN n_decisions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE episodes ADD COLUMN n_bad INTEGER NOT NULL DEFAULT 0;      -- bad lines of its logs and flow logs
ALTER TABLE episodes ADD COLUMN flow_off TEXT NOT NULL DEFAULT '';     -- why its flow served nothing, or ''
ALTER TABLE episodes ADD COLUMN tool_list INTEGER;                     -- tool_lists.id; NULL: no tools
ALTER TABLE episodes ADD COLUMN doc TEXT;                              -- see above; NULL: no events
ALTER TABLE episodes ADD COLUMN wire TEXT;                             -- [[server_idx, line_no, t_ms, sender, message, raw], …]

-- What the rows said, rewritten as the document says it. A raw JSON
-- column that does not hold JSON is kept as a JSON string, so that the
-- document stays JSON.
UPDATE episodes SET
	server_names = coalesce((SELECT group_concat(name, char(31) ORDER BY idx) FROM servers s WHERE s.episode_id = episodes.id), ''),
	n_runs = (SELECT count(*) FROM runs r WHERE r.episode_id = episodes.id),
	n_decisions = (SELECT count(*) FROM decisions d WHERE d.episode_id = episodes.id),
	n_bad = (SELECT count(*) FROM problems p WHERE p.path IN (
		SELECT ef.path FROM episode_files ef WHERE ef.episode_id = episodes.id
		UNION SELECT ff.path FROM flow_files ff JOIN episode_files ef ON ff.log_path = ef.path WHERE ef.episode_id = episodes.id)),
	flow_off = coalesce((SELECT group_concat(ff.off_reason, '; ') FROM flow_files ff JOIN episode_files ef ON ff.log_path = ef.path
		WHERE ef.episode_id = episodes.id AND ff.off_reason != ''), ''),
	doc = '{"servers":[' || coalesce((SELECT group_concat('[' || json_quote(name) || ',' || json_quote(session) || ',' || json_quote(path) || ','
			|| iif(json_valid(command), command, '[]') || ','
			|| coalesce(iif(json_valid(info), info, json_quote(info)), 'null') || ']', ',' ORDER BY idx)
		FROM servers s WHERE s.episode_id = episodes.id), '')
	|| '],"messages":[' || coalesce((SELECT group_concat('[' || seq || ',' || t_ms || ',' || json_quote(role) || ',' || json_quote(text) || ']', ',' ORDER BY idx)
		FROM messages m WHERE m.episode_id = episodes.id), '')
	|| '],"calls":[' || coalesce((SELECT group_concat('[' || seq || ',' || t_ms || ',' || json_quote(request_id) || ',' || json_quote(server) || ','
			|| json_quote(tool) || ',' || json_quote(kind) || ','
			|| coalesce(iif(json_valid(arguments), arguments, json_quote(arguments)), 'null') || ',' || json_quote(actor) || ',' || turn || ','
			|| iif(cancelled, 'true', 'false') || ',' || iif(unreadable, 'true', 'false') || ','
			|| coalesce(result_seq, 'null') || ',' || coalesce(result_t_ms, 'null') || ',' || coalesce(json_quote(result_text), 'null') || ','
			|| iif(is_error, 'true', 'false') || ',' || coalesce(iif(json_valid(result_raw), result_raw, json_quote(result_raw)), 'null') || ']', ',' ORDER BY idx)
		FROM calls c WHERE c.episode_id = episodes.id), '')
	|| '],"turns":[' || coalesce((SELECT group_concat('[' || start_ms || ',' || end_ms || ',' || n_calls || ']', ',' ORDER BY idx)
		FROM turns t WHERE t.episode_id = episodes.id), '')
	|| ']}',
	wire = (SELECT '[' || group_concat('[' || server_idx || ',' || line_no || ',' || t_ms || ',' || json_quote(sender) || ','
			|| coalesce(iif(json_valid(message), message, json_quote(message)), 'null') || ',' || coalesce(json_quote(raw), 'null') || ']',
			',' ORDER BY server_idx, line_no) || ']'
		FROM wire_lines w WHERE w.episode_id = episodes.id);

CREATE TEMP TABLE episode_tools AS
SELECT e.id AS episode_id, (SELECT '[' || group_concat('[' || json_quote(name) || ',' || json_quote(server) || ',' || json_quote(kind) || ','
		|| coalesce(iif(json_valid(input_schema), input_schema, json_quote(input_schema)), 'null') || ','
		|| coalesce(iif(json_valid(annotations), annotations, json_quote(annotations)), 'null') || ']', ',' ORDER BY idx) || ']'
	FROM tools t WHERE t.episode_id = e.id) AS doc
FROM episodes e;
INSERT INTO tool_lists (doc) SELECT DISTINCT doc FROM episode_tools WHERE doc IS NOT NULL;
UPDATE episodes SET tool_list = (SELECT tl.id FROM episode_tools et JOIN tool_lists tl ON tl.doc = et.doc WHERE et.episode_id = episodes.id);
DROP TABLE episode_tools;

DROP TABLE servers;
DROP TABLE tools;
DROP TABLE messages;
DROP TABLE calls;
DROP TABLE turns;
DROP TABLE wire_lines;

-- The tables that were, as views of the documents.
CREATE VIEW servers AS
SELECT e.id AS episode_id, j.key AS idx, j.value ->> 0 AS name, j.value ->> 1 AS session, j.value ->> 2 AS path,
	j.value -> 3 AS command, nullif(j.value -> 4, 'null') AS info
FROM episodes e, json_each(e.doc, '$.servers') j;

CREATE VIEW tools AS
SELECT e.id AS episode_id, j.key AS idx, j.value ->> 0 AS name, j.value ->> 1 AS server, j.value ->> 2 AS kind,
	nullif(j.value -> 3, 'null') AS input_schema, nullif(j.value -> 4, 'null') AS annotations
FROM episodes e JOIN tool_lists tl ON tl.id = e.tool_list, json_each(tl.doc) j;

CREATE VIEW messages AS
SELECT e.id AS episode_id, j.key AS idx, j.value ->> 0 AS seq, j.value ->> 1 AS t_ms, j.value ->> 2 AS role, j.value ->> 3 AS text
FROM episodes e, json_each(e.doc, '$.messages') j;

CREATE VIEW calls AS
SELECT e.id AS episode_id, j.key AS idx, j.value ->> 0 AS seq, j.value ->> 1 AS t_ms, j.value ->> 2 AS request_id, j.value ->> 3 AS server,
	j.value ->> 4 AS tool, j.value ->> 5 AS kind, nullif(j.value -> 6, 'null') AS arguments, j.value ->> 7 AS actor, j.value ->> 8 AS turn,
	j.value ->> 9 AS cancelled, j.value ->> 10 AS unreadable, j.value ->> 11 AS result_seq, j.value ->> 12 AS result_t_ms,
	j.value ->> 13 AS result_text, j.value ->> 14 AS is_error, nullif(j.value -> 15, 'null') AS result_raw
FROM episodes e, json_each(e.doc, '$.calls') j;

CREATE VIEW turns AS
SELECT e.id AS episode_id, j.key AS idx, j.value ->> 0 AS start_ms, j.value ->> 1 AS end_ms, j.value ->> 2 AS n_calls
FROM episodes e, json_each(e.doc, '$.turns') j;

CREATE VIEW wire_lines AS
SELECT e.id AS episode_id, j.value ->> 0 AS server_idx, j.value ->> 1 AS line_no, j.value ->> 2 AS t_ms, j.value ->> 3 AS sender,
	nullif(j.value -> 4, 'null') AS message, j.value ->> 5 AS raw
FROM episodes e, json_each(e.wire) j;
