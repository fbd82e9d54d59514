-- The reference's v1 schema (google-adk 2.13 DatabaseSessionService on SQLite), verbatim.
CREATE TABLE IF NOT EXISTS adk_internal_metadata (
	"key" VARCHAR(128) NOT NULL, 
	value VARCHAR(256) NOT NULL, 
	PRIMARY KEY ("key")
);
CREATE TABLE IF NOT EXISTS sessions (
	app_name VARCHAR(128) NOT NULL, 
	user_id VARCHAR(128) NOT NULL, 
	id VARCHAR(128) NOT NULL, 
	state TEXT NOT NULL, 
	create_time DATETIME NOT NULL, 
	update_time DATETIME NOT NULL, 
	PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS app_states (
	app_name VARCHAR(128) NOT NULL, 
	state TEXT NOT NULL, 
	update_time DATETIME NOT NULL, 
	PRIMARY KEY (app_name)
);
CREATE TABLE IF NOT EXISTS user_states (
	app_name VARCHAR(128) NOT NULL, 
	user_id VARCHAR(128) NOT NULL, 
	state TEXT NOT NULL, 
	update_time DATETIME NOT NULL, 
	PRIMARY KEY (app_name, user_id)
);
CREATE TABLE IF NOT EXISTS events (
	id VARCHAR(128) NOT NULL, 
	app_name VARCHAR(128) NOT NULL, 
	user_id VARCHAR(128) NOT NULL, 
	session_id VARCHAR(128) NOT NULL, 
	invocation_id VARCHAR(256) NOT NULL, 
	timestamp DATETIME NOT NULL, 
	event_data TEXT, 
	PRIMARY KEY (id, app_name, user_id, session_id), 
	FOREIGN KEY(app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_events_app_user_session_ts_id ON events (app_name, user_id, session_id, timestamp DESC, id DESC);
INSERT OR IGNORE INTO adk_internal_metadata ("key", value) VALUES ('schema_version', '1');
-- agentstate's own, beside the reference's tables (ADK for Python leaves them alone): a session's
-- display name, labels and expiry, kept only for sessions that have any, and an index to find a
-- session by app and id. A row whose session_create_time is not its session's create_time was
-- left behind by a program that deleted the session without it, and is ignored.
CREATE TABLE IF NOT EXISTS agentstate_session_attributes (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	session_id VARCHAR(128) NOT NULL,
	session_create_time DATETIME NOT NULL,
	display_name TEXT,
	labels TEXT,
	expire_time DATETIME,
	PRIMARY KEY (app_name, user_id, session_id),
	FOREIGN KEY(app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_sessions_app_id ON sessions (app_name, id);
-- Session lists in each order, from an index: an app's and a user's, by last update and by creation.
CREATE INDEX IF NOT EXISTS idx_sessions_app_update ON sessions (app_name, update_time, user_id, id);
CREATE INDEX IF NOT EXISTS idx_sessions_app_user_update ON sessions (app_name, user_id, update_time, id);
CREATE INDEX IF NOT EXISTS idx_sessions_app_create ON sessions (app_name, create_time, user_id, id);
CREATE INDEX IF NOT EXISTS idx_sessions_app_user_create ON sessions (app_name, user_id, create_time, id);
-- The expiry sweep reads expired sessions oldest first.
CREATE INDEX IF NOT EXISTS idx_agentstate_attributes_expire ON agentstate_session_attributes (expire_time);
-- Snapshots of a session's history state (see agentstate::history): at its creation
-- (at_micros = -2^63) and every few dozen events, written by the reads that replayed past them.
CREATE TABLE IF NOT EXISTS agentstate_state_snapshots (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	session_id VARCHAR(128) NOT NULL,
	session_create_time DATETIME NOT NULL,
	at_micros BIGINT NOT NULL,
	at_event_id VARCHAR(128) NOT NULL,
	state TEXT NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, at_micros, at_event_id),
	FOREIGN KEY(app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
-- Long-term memories (agentstate::memory): one row per memory, unique per owner (app, user),
-- source (the session it came from, '' for none) and id, with the terms it is found by (hashes,
-- no readable text) indexed by FTS5; the ids each owner deleted, which adding their session again
-- leaves out; and each owner's sources, whose row a write locks first (writes of one source take
-- turns).
CREATE TABLE IF NOT EXISTS agentstate_memories (
	row_id INTEGER PRIMARY KEY,
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	source VARCHAR(128) NOT NULL,
	memory_id VARCHAR(128) NOT NULL,
	create_micros BIGINT NOT NULL,
	expire_micros BIGINT,
	author TEXT,
	timestamp TEXT,
	content TEXT NOT NULL,
	custom_metadata TEXT,
	terms TEXT NOT NULL,
	UNIQUE (app_name, user_id, source, memory_id)
);
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_order ON agentstate_memories (app_name, user_id, create_micros, source, memory_id);
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_id ON agentstate_memories (app_name, user_id, memory_id);
-- A memory named by its id alone (Memory Bank's names: an engine's memories have distinct ids).
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_app_id ON agentstate_memories (app_name, memory_id);
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_expire ON agentstate_memories (expire_micros) WHERE expire_micros IS NOT NULL;
CREATE TABLE IF NOT EXISTS agentstate_memory_deletions (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	memory_id VARCHAR(128) NOT NULL,
	PRIMARY KEY (app_name, user_id, memory_id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS agentstate_memories_fts USING fts5(
	terms, content='agentstate_memories', content_rowid='row_id', tokenize='unicode61'
);
CREATE TRIGGER IF NOT EXISTS agentstate_memories_fts_insert AFTER INSERT ON agentstate_memories BEGIN
	INSERT INTO agentstate_memories_fts (rowid, terms) VALUES (new.row_id, new.terms);
END;
CREATE TRIGGER IF NOT EXISTS agentstate_memories_fts_delete AFTER DELETE ON agentstate_memories BEGIN
	INSERT INTO agentstate_memories_fts (agentstate_memories_fts, rowid, terms) VALUES ('delete', old.row_id, old.terms);
END;
CREATE TRIGGER IF NOT EXISTS agentstate_memories_fts_update AFTER UPDATE OF terms ON agentstate_memories BEGIN
	INSERT INTO agentstate_memories_fts (agentstate_memories_fts, rowid, terms) VALUES ('delete', old.row_id, old.terms);
	INSERT INTO agentstate_memories_fts (rowid, terms) VALUES (new.row_id, new.terms);
END;
CREATE TABLE IF NOT EXISTS agentstate_memory_sources (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	source VARCHAR(128) NOT NULL,
	PRIMARY KEY (app_name, user_id, source)
);
CREATE TABLE IF NOT EXISTS agentstate_run_leases (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	session_id VARCHAR(128) NOT NULL,
	holder VARCHAR(128) NOT NULL,
	until_micros BIGINT NOT NULL,
	interrupts INTEGER NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id)
);
CREATE TABLE IF NOT EXISTS agentstate_state_writes (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	at_micros BIGINT NOT NULL,
	write_id VARCHAR(64) NOT NULL,
	origin TEXT NOT NULL,
	set_keys TEXT NOT NULL,
	deleted_keys TEXT NOT NULL,
	PRIMARY KEY (app_name, user_id, at_micros, write_id)
);
-- Each event's facts for the compacted view (agentstate::compaction::Facts: its invocation, stored
-- microsecond and the rest as text), written with the event and gone with it, so the view reads
-- them alone, without the events' rows, and then only the text of the events it
-- keeps. An event without a row (written by another program, or rewritten) is read from its text.
CREATE TABLE IF NOT EXISTS agentstate_event_facts (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	session_id VARCHAR(128) NOT NULL,
	event_id VARCHAR(128) NOT NULL,
	invocation_id VARCHAR(256) NOT NULL,
	micros BIGINT NOT NULL,
	facts TEXT NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, event_id),
	FOREIGN KEY(event_id, app_name, user_id, session_id) REFERENCES events (id, app_name, user_id, session_id) ON DELETE CASCADE
) WITHOUT ROWID;
-- Artifacts (agentstate::artifact): one row per version of a file, per app, user, session ('' for
-- a user: name, the user's in every session) and name; its payload in data, the rest of its part
-- as JSON, its MIME type and custom metadata. Not tied to a session row: artifacts may belong to
-- sessions kept elsewhere, as ADK's artifact services allow.
CREATE TABLE IF NOT EXISTS agentstate_artifacts (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	session_id VARCHAR(128) NOT NULL,
	name VARCHAR(256) NOT NULL,
	version BIGINT NOT NULL,
	create_micros BIGINT NOT NULL,
	mime_type TEXT,
	custom_metadata TEXT NOT NULL,
	part TEXT NOT NULL,
	kind VARCHAR(8) NOT NULL,
	size BIGINT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, name, version)
);
