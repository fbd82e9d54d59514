-- The reference's v1 schema (google-adk 2.13 DatabaseSessionService on MySQL/MariaDB): LONGTEXT
-- JSON, DATETIME(6). One deliberate difference: the binary collation, so ids compare exactly
-- (`S1` and `s1` are two sessions) as on every other backend.
CREATE TABLE IF NOT EXISTS adk_internal_metadata (
  `key` varchar(128) NOT NULL,
  `value` varchar(256) NOT NULL,
  PRIMARY KEY (`key`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS sessions (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `id` varchar(128) NOT NULL,
  `state` longtext NOT NULL,
  `create_time` datetime(6) NOT NULL,
  `update_time` datetime(6) NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS app_states (
  `app_name` varchar(128) NOT NULL,
  `state` longtext NOT NULL,
  `update_time` datetime(6) NOT NULL,
  PRIMARY KEY (`app_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS user_states (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `state` longtext NOT NULL,
  `update_time` datetime(6) NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS events (
  `id` varchar(128) NOT NULL,
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `session_id` varchar(128) NOT NULL,
  `invocation_id` varchar(256) NOT NULL,
  `timestamp` datetime(6) NOT NULL,
  `event_data` longtext DEFAULT NULL,
  PRIMARY KEY (`id`,`app_name`,`user_id`,`session_id`),
  KEY `idx_events_app_user_session_ts_id` (`app_name`,`user_id`,`session_id`,`timestamp` DESC,`id` DESC),
  CONSTRAINT `events_ibfk_1` FOREIGN KEY (`app_name`, `user_id`, `session_id`)
    REFERENCES `sessions` (`app_name`, `user_id`, `id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT IGNORE INTO adk_internal_metadata (`key`, `value`) VALUES ('schema_version', '1');
-- agentstate's own, beside the reference's tables (ADK for Python leaves them alone): a session's
-- display name, labels and expiry, kept only for sessions that have any, and an index to find a
-- session by app and id. A row whose session_create_time is not its session's create_time was
-- left behind by a program that deleted the session without it, and is ignored.
CREATE TABLE IF NOT EXISTS agentstate_session_attributes (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `session_id` varchar(128) NOT NULL,
  `session_create_time` datetime(6) NOT NULL,
  `display_name` longtext DEFAULT NULL,
  `labels` longtext DEFAULT NULL,
  `expire_time` datetime(6) DEFAULT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`session_id`),
  CONSTRAINT `agentstate_session_attributes_ibfk_1` FOREIGN KEY (`app_name`, `user_id`, `session_id`)
    REFERENCES `sessions` (`app_name`, `user_id`, `id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- Snapshots of a session's history state (see agentstate::history): at its creation
-- (at_micros = -2^63) and every few dozen events, written by the reads that replayed past them.
CREATE TABLE IF NOT EXISTS agentstate_state_snapshots (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `session_id` varchar(128) NOT NULL,
  `session_create_time` datetime(6) NOT NULL,
  `at_micros` bigint NOT NULL,
  `at_event_id` varchar(128) NOT NULL,
  `state` longtext NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`session_id`,`at_micros`,`at_event_id`),
  CONSTRAINT `agentstate_state_snapshots_ibfk_1` FOREIGN KEY (`app_name`, `user_id`, `session_id`)
    REFERENCES `sessions` (`app_name`, `user_id`, `id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- Long-term memories (agentstate::memory): one row per memory, unique per owner (app, user),
-- source (the session it came from, '' for none) and id, with the terms it is found by (hashes of
-- 12 letters, no readable text: above InnoDB's minimum token size, never a stop word) under a
-- FULLTEXT index; the ids each owner deleted, which adding their session again leaves out; and
-- each owner's sources, whose row a write locks first (writes of one source take turns, where
-- concurrent inserts of the same keys would deadlock).
CREATE TABLE IF NOT EXISTS agentstate_memories (
  `row_id` bigint NOT NULL AUTO_INCREMENT,
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `source` varchar(128) NOT NULL,
  `memory_id` varchar(128) NOT NULL,
  `create_micros` bigint NOT NULL,
  `expire_micros` bigint DEFAULT NULL,
  `author` longtext DEFAULT NULL,
  `timestamp` longtext DEFAULT NULL,
  `content` longtext NOT NULL,
  `custom_metadata` longtext DEFAULT NULL,
  `terms` longtext NOT NULL,
  PRIMARY KEY (`row_id`),
  UNIQUE KEY `agentstate_memories_key` (`app_name`,`user_id`,`source`,`memory_id`),
  KEY `idx_agentstate_memories_order` (`app_name`,`user_id`,`create_micros`,`source`,`memory_id`),
  KEY `idx_agentstate_memories_id` (`app_name`,`user_id`,`memory_id`),
  KEY `idx_agentstate_memories_app_id` (`app_name`,`memory_id`),
  KEY `idx_agentstate_memories_expire` (`expire_micros`),
  FULLTEXT KEY `ft_agentstate_memories_terms` (`terms`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS agentstate_memory_deletions (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `memory_id` varchar(128) NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`memory_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS agentstate_memory_sources (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `source` varchar(128) NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`source`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS agentstate_run_leases (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `session_id` varchar(128) NOT NULL,
  `holder` varchar(128) NOT NULL,
  `until_micros` bigint NOT NULL,
  `interrupts` int NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`session_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS agentstate_state_writes (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `at_micros` bigint NOT NULL,
  `write_id` varchar(64) NOT NULL,
  `origin` text NOT NULL,
  `set_keys` mediumtext NOT NULL,
  `deleted_keys` mediumtext NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`at_micros`,`write_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- Each event's facts for the compacted view (agentstate::compaction::Facts: its invocation, stored
-- microsecond and the rest as text), written with the event and gone with it, so the view reads
-- them alone, without the events' rows, and then only the text of the events it
-- keeps. An event without them (written by another program; '' once rewritten) is read from its text.
CREATE TABLE IF NOT EXISTS agentstate_event_facts (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `session_id` varchar(128) NOT NULL,
  `event_id` varchar(128) NOT NULL,
  `invocation_id` varchar(256) NOT NULL,
  `micros` bigint NOT NULL,
  `facts` text NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`session_id`,`event_id`),
  CONSTRAINT `agentstate_event_facts_event` FOREIGN KEY (`event_id`, `app_name`, `user_id`, `session_id`)
    REFERENCES `events` (`id`, `app_name`, `user_id`, `session_id`) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
-- Artifacts (agentstate::artifact): one row per version of a file, per app, user, session ('' for
-- a user: name, the user's in every session) and name; its payload in data, the rest of its part
-- as JSON, its MIME type and custom metadata. Not tied to a session row: artifacts may belong to
-- sessions kept elsewhere, as ADK's artifact services allow.
CREATE TABLE IF NOT EXISTS agentstate_artifacts (
  `app_name` varchar(128) NOT NULL,
  `user_id` varchar(128) NOT NULL,
  `session_id` varchar(128) NOT NULL,
  `name` varchar(256) NOT NULL,
  `version` bigint NOT NULL,
  `create_micros` bigint NOT NULL,
  `mime_type` text,
  `custom_metadata` mediumtext NOT NULL,
  `part` mediumtext NOT NULL,
  `kind` varchar(8) NOT NULL,
  `size` bigint NOT NULL,
  `data` longblob NOT NULL,
  PRIMARY KEY (`app_name`,`user_id`,`session_id`,`name`,`version`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
