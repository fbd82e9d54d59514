-- The reference's v1 schema (google-adk 2.13 DatabaseSessionService on PostgreSQL): same tables,
-- columns, constraint names and index as pg_dump shows for a database it created.
CREATE TABLE IF NOT EXISTS adk_internal_metadata (
    key character varying(128) NOT NULL,
    value character varying(256) NOT NULL,
    CONSTRAINT adk_internal_metadata_pkey PRIMARY KEY (key)
);
CREATE TABLE IF NOT EXISTS sessions (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    id character varying(128) NOT NULL,
    state jsonb NOT NULL,
    create_time timestamp without time zone NOT NULL,
    update_time timestamp without time zone NOT NULL,
    CONSTRAINT sessions_pkey PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS app_states (
    app_name character varying(128) NOT NULL,
    state jsonb NOT NULL,
    update_time timestamp without time zone NOT NULL,
    CONSTRAINT app_states_pkey PRIMARY KEY (app_name)
);
CREATE TABLE IF NOT EXISTS user_states (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    state jsonb NOT NULL,
    update_time timestamp without time zone NOT NULL,
    CONSTRAINT user_states_pkey PRIMARY KEY (app_name, user_id)
);
CREATE TABLE IF NOT EXISTS events (
    id character varying(128) NOT NULL,
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    session_id character varying(128) NOT NULL,
    invocation_id character varying(256) NOT NULL,
    "timestamp" timestamp without time zone NOT NULL,
    event_data jsonb,
    CONSTRAINT events_pkey PRIMARY KEY (id, app_name, user_id, session_id),
    CONSTRAINT events_app_name_user_id_session_id_fkey FOREIGN KEY (app_name, user_id, session_id)
        REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_events_app_user_session_ts_id
    ON events USING btree (app_name, user_id, session_id, "timestamp" DESC, id DESC);
INSERT INTO adk_internal_metadata (key, value) VALUES ('schema_version', '1') ON CONFLICT (key) DO NOTHING;
-- agentstate's own, beside the reference's tables (ADK for Python leaves them alone): a session's
-- display name, labels and expiry, kept only for sessions that have any, and an index to find a
-- session by app and id. A row whose session_create_time is not its session's create_time was
-- left behind by a program that deleted the session without it, and is ignored.
CREATE TABLE IF NOT EXISTS agentstate_session_attributes (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    session_id character varying(128) NOT NULL,
    session_create_time timestamp without time zone NOT NULL,
    display_name text,
    labels jsonb,
    expire_time timestamp without time zone,
    CONSTRAINT agentstate_session_attributes_pkey PRIMARY KEY (app_name, user_id, session_id),
    CONSTRAINT agentstate_session_attributes_session_fkey FOREIGN KEY (app_name, user_id, session_id)
        REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_sessions_app_id ON sessions USING btree (app_name, id);
-- Session lists in each order, from an index: an app's and a user's, by last update and by creation.
CREATE INDEX IF NOT EXISTS idx_sessions_app_update ON sessions USING btree (app_name, update_time, user_id, id);
CREATE INDEX IF NOT EXISTS idx_sessions_app_user_update ON sessions USING btree (app_name, user_id, update_time, id);
CREATE INDEX IF NOT EXISTS idx_sessions_app_create ON sessions USING btree (app_name, create_time, user_id, id);
CREATE INDEX IF NOT EXISTS idx_sessions_app_user_create ON sessions USING btree (app_name, user_id, create_time, id);
-- The expiry sweep reads expired sessions oldest first.
CREATE INDEX IF NOT EXISTS idx_agentstate_attributes_expire ON agentstate_session_attributes USING btree (expire_time);
-- Snapshots of a session's history state (see agentstate::history): at its creation
-- (at_micros = -2^63) and every few dozen events, written by the reads that replayed past them.
CREATE TABLE IF NOT EXISTS agentstate_state_snapshots (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    session_id character varying(128) NOT NULL,
    session_create_time timestamp without time zone NOT NULL,
    at_micros bigint NOT NULL,
    at_event_id character varying(128) NOT NULL,
    state jsonb NOT NULL,
    CONSTRAINT agentstate_state_snapshots_pkey PRIMARY KEY (app_name, user_id, session_id, at_micros, at_event_id),
    CONSTRAINT agentstate_state_snapshots_session_fkey FOREIGN KEY (app_name, user_id, session_id)
        REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
-- Long-term memories (agentstate::memory): one row per memory, unique per owner (app, user),
-- source (the session it came from, '' for none) and id, with the terms it is found by (hashes,
-- no readable text) as a tsvector under a GIN index; the ids each owner deleted, which adding their
-- session again leaves out; and each owner's sources, whose row a write locks first (writes of one
-- source take turns).
CREATE TABLE IF NOT EXISTS agentstate_memories (
    row_id bigserial PRIMARY KEY,
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    source character varying(128) NOT NULL,
    memory_id character varying(128) NOT NULL,
    create_micros bigint NOT NULL,
    expire_micros bigint,
    author text,
    "timestamp" text,
    content text NOT NULL,
    custom_metadata text,
    terms text NOT NULL,
    terms_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, terms)) STORED,
    CONSTRAINT agentstate_memories_key UNIQUE (app_name, user_id, source, memory_id)
);
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_order ON agentstate_memories USING btree (app_name, user_id, create_micros, source, memory_id);
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_id ON agentstate_memories USING btree (app_name, user_id, memory_id);
-- A memory named by its id alone (Memory Bank's names: an engine's memories have distinct ids).
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_app_id ON agentstate_memories USING btree (app_name, memory_id);
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_expire ON agentstate_memories USING btree (expire_micros) WHERE expire_micros IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_agentstate_memories_terms ON agentstate_memories USING gin (terms_vector) WITH (fastupdate = off);
CREATE TABLE IF NOT EXISTS agentstate_memory_deletions (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    memory_id character varying(128) NOT NULL,
    CONSTRAINT agentstate_memory_deletions_pkey PRIMARY KEY (app_name, user_id, memory_id)
);
CREATE TABLE IF NOT EXISTS agentstate_memory_sources (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    source character varying(128) NOT NULL,
    CONSTRAINT agentstate_memory_sources_pkey PRIMARY KEY (app_name, user_id, source)
);
CREATE TABLE IF NOT EXISTS agentstate_run_leases (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    session_id character varying(128) NOT NULL,
    holder character varying(128) NOT NULL,
    until_micros bigint NOT NULL,
    interrupts integer NOT NULL,
    CONSTRAINT agentstate_run_leases_pkey PRIMARY KEY (app_name, user_id, session_id)
);
CREATE TABLE IF NOT EXISTS agentstate_state_writes (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    at_micros bigint NOT NULL,
    write_id character varying(64) NOT NULL,
    origin text NOT NULL,
    set_keys text NOT NULL,
    deleted_keys text NOT NULL,
    CONSTRAINT agentstate_state_writes_pkey PRIMARY KEY (app_name, user_id, at_micros, write_id)
);
-- Each event's facts for the compacted view (agentstate::compaction::Facts: its invocation, stored
-- microsecond and the rest as text), written with the event and gone with it, so the view reads
-- them alone, without the events' rows, and then only the text of the events it
-- keeps. An event without a row (written by another program, or rewritten) is read from its text.
CREATE TABLE IF NOT EXISTS agentstate_event_facts (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    session_id character varying(128) NOT NULL,
    event_id character varying(128) NOT NULL,
    invocation_id character varying(256) NOT NULL,
    micros bigint NOT NULL,
    facts text NOT NULL,
    CONSTRAINT agentstate_event_facts_pkey PRIMARY KEY (app_name, user_id, session_id, event_id),
    CONSTRAINT agentstate_event_facts_event_fkey FOREIGN KEY (event_id, app_name, user_id, session_id)
        REFERENCES events (id, app_name, user_id, session_id) ON DELETE CASCADE
);
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
	data BYTEA NOT NULL,
	PRIMARY KEY (app_name, user_id, session_id, name, version)
);
