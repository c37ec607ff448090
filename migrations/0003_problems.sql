-- problems keeps the bad input ingest met in each file it read: every line
-- that could not be read (its number, the member at fault and the message),
-- so that hoist sessions can flag the sessions they belong to and every
-- command can say how many have them, long after the warning scrolled away.
-- A file's problems are replaced whenever the file is read again.
CREATE TABLE problems (
	path    TEXT NOT NULL,            -- the file, as log_files.path or flow_files.path
	line_no INTEGER NOT NULL,         -- 1-based; 0 for the file as a whole
	field   TEXT NOT NULL DEFAULT '', -- the member at fault, or '' for the line
	message TEXT NOT NULL,
	PRIMARY KEY (path, line_no)
) STRICT;

-- client_name is the MCP client that spoke to the server (initialize's
-- clientInfo.name). Before this version agent_model held it for recorded
-- sessions; agent_model is now the model that drove the agent, as the log
-- header says, and empty when unknown.
ALTER TABLE episodes ADD COLUMN client_name TEXT NOT NULL DEFAULT '';

-- unreadable marks a call whose answer is in its log but could not be
-- read: it was answered, its result is unknown.
ALTER TABLE calls ADD COLUMN unreadable INTEGER NOT NULL DEFAULT 0;

-- off_reason is why a flow served nothing in the session of a flow log
-- (its off line: a flow of other servers than the proxy's), or empty.
ALTER TABLE flow_files ADD COLUMN off_reason TEXT NOT NULL DEFAULT '';

-- Logs ingested before this version stored the client's name as the agent
-- model and kept no problems: have the next ingest read them again.
UPDATE log_files SET size = -1 WHERE status = 'ingested';
