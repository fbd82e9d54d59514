//! An append: the event, the marker, the state changes, in the writer's transaction.

use std::sync::LazyLock;

use agentstate::store::{CommitOutcome, EventCommit, SharedStateUpdate};
use agentstate::{Error, Map, Result, SessionKey, Value};
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::{Shared, execute, now_text, stored_event};
use crate::codec::{self, parse_sqlite_text, sqlite_text};
use crate::sqlite::edit::StateEdit;
use crate::sqlite::sqlite_error;

/// `$name.sql` with its `/*state*/` replaced by `$with` and its comments dropped (the statement
/// cache hashes the text on every use), built once.
macro_rules! edited_sql {
    ($name:literal, $with:literal) => {{
        static SQL: LazyLock<String> = LazyLock::new(|| {
            let lines = sql!($name).lines().filter(|line| !line.trim_start().starts_with("--"));
            lines.collect::<Vec<_>>().join("\n").replace("/*state*/", $with)
        });
        SQL.as_str()
    }};
}

impl Shared<'_> {
    /// Merges `delta` into the row in place and removes `deleted` ([`StateEdit`]); a missing row
    /// is created with the merged state.
    fn edit(self, conn: &Connection, delta: &Map<String, Value>, deleted: &[String], now: &str) -> Result<()> {
        let edit = StateEdit::new(delta, deleted);
        let fixed: Vec<&str> = match self {
            Self::App(app) => vec![app, now],
            Self::User(app, user) => vec![app, user, now],
        };
        let run = |sql: &str, extra: &[&str]| -> Result<bool> {
            Ok(execute(conn, "write shared state", sql, params_from_iter(fixed.iter().chain(extra)))? > 0)
        };
        let found = match (&edit, self) {
            (StateEdit::Nothing, _) => return Ok(()),
            (StateEdit::Patch(patch), Self::App(_)) => {
                run(edited_sql!("app_state_edit", "json_patch(state, ?3)"), &[patch])?
            }
            (StateEdit::Patch(patch), Self::User(..)) => {
                run(edited_sql!("user_state_edit", "json_patch(state, ?4)"), &[patch])?
            }
            (StateEdit::Paths { .. }, _) => {
                let template = match self {
                    Self::App(_) => sql!("app_state_edit"),
                    Self::User(..) => sql!("user_state_edit"),
                };
                let mut found = true;
                for chunk in edit.chunks(fixed.len() + 1) {
                    found = run(&template.replace("/*state*/", &chunk.expression), &chunk.params)?;
                    if !found {
                        break;
                    }
                }
                found
            }
        };
        if !found {
            self.merge(conn, delta, deleted, now)?;
        }
        Ok(())
    }
}

/// A write of app or user state without a session, and its log entry, in the writer's transaction.
pub(in crate::sqlite) fn update_shared(conn: &Connection, update: &SharedStateUpdate) -> Result<()> {
    let now = sqlite_text(update.now_micros)?;
    let (app, user) = update.owner.shared()?;
    let shared = user.map_or(Shared::App(app), |user| Shared::User(app, user));
    shared.edit(conn, &update.delta, &update.deleted, &now)?;
    let write = agentstate::store::SharedStateWrite::of(update);
    let user = user.unwrap_or_default();
    let (set, deleted) = (crate::state_log::keys_text(&write.set), crate::state_log::keys_text(&write.deleted));
    let params = params![app, user, write.at_micros, write.id, write.origin, set, deleted];
    execute(conn, "log a state write", sql!("state_write_put"), params).map(drop)
}

pub(in crate::sqlite) fn commit(conn: &Connection, commit: &EventCommit) -> Result<CommitOutcome> {
    let EventCommit { key, event, delta, deleted, .. } = commit;
    let not_found = || Error::NotFound { session_id: key.session_id().to_owned() };
    let now = sqlite_text(commit.timestamp_micros)?;
    let expiry_at = now_text(commit.now_micros)?;
    // The event goes in first: an id clash is a retry (or a conflict) whatever the marker says,
    // and nothing is written then. A missing session fails the insert's foreign key.
    let data = codec::event_data(event)?;
    let params = params![key.app_name(), key.user_id(), key.session_id(), event.id, event.invocation_id, now, data];
    if let Err(e) = conn.prepare_cached(sql!("event_insert")).and_then(|mut stmt| stmt.execute(params)) {
        let code = e.sqlite_error().map(|e| e.extended_code);
        if code == Some(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY) {
            return Err(Error::NotFound { session_id: key.session_id().to_owned() });
        }
        return match stored_event(conn, key, &event.id)? {
            Some(existing) if code == Some(rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY) => {
                if marker_of(conn, key, commit.now_micros)?.is_none() {
                    return Err(not_found());
                }
                CommitOutcome::of_stored(existing, event)
            }
            _ => Err(sqlite_error("insert event", &e)),
        };
    }
    let facts = agentstate::compaction::Facts::of(event).to_text();
    let (id, invocation) = (&event.id, &event.invocation_id);
    let params =
        params![key.app_name(), key.user_id(), key.session_id(), id, invocation, commit.timestamp_micros, facts];
    execute(conn, "keep an event's facts", sql!("event_facts_put"), params)?;
    // Then the marker moves, only from where the caller's handle saw it and only on a live
    // session (any error from here on rolls the event back with the rest).
    let edit = StateEdit::new(&delta.session, &deleted.session);
    let at = Moving { key, now: &now, expiry_at: expiry_at.as_deref() };
    if !at.move_marker(conn, &edit, &sqlite_text(commit.expected_last_update_micros)?)? {
        let Some(marker) = marker_of(conn, key, commit.now_micros)? else { return Err(not_found()) };
        // The same time in another text form (written by another program) moves it too.
        if parse_sqlite_text(&marker)? != commit.expected_last_update_micros || !at.move_marker(conn, &edit, &marker)? {
            return Err(Error::stale());
        }
    }
    if let Some(to) = commit.extend_expiry_to {
        let params = params![key.app_name(), key.user_id(), key.session_id(), sqlite_text(to)?];
        execute(conn, "move an expire time", sql!("session_expire_extend"), params)?;
    }
    if !delta.app.is_empty() {
        Shared::App(key.app_name()).edit(conn, &delta.app, &deleted.app, &now)?;
    }
    if !delta.user.is_empty() {
        Shared::User(key.app_name(), key.user_id()).edit(conn, &delta.user, &deleted.user, &now)?;
    }
    Ok(CommitOutcome::Committed)
}

/// The session's marker (as stored), if it exists and has not expired at `now_micros`.
fn marker_of(conn: &Connection, key: &SessionKey, now_micros: i64) -> Result<Option<String>> {
    let row: Option<(String, Option<String>)> = conn
        .prepare_cached(sql!("session_marker_get"))
        .and_then(|mut stmt| {
            let params = params![key.app_name(), key.user_id(), key.session_id()];
            stmt.query_row(params, |r| Ok((r.get(0)?, r.get(1)?))).optional()
        })
        .map_err(|e| sqlite_error("read session", &e))?;
    let Some((marker, expire)) = row else { return Ok(None) };
    let expire = expire.as_deref().map(parse_sqlite_text).transpose()?;
    Ok(agentstate::live_at(expire, now_micros).then_some(marker))
}

/// Where a marker moves: the session, the new marker, and the time expiry is judged at.
struct Moving<'a> {
    key: &'a SessionKey,
    now: &'a str,
    expiry_at: Option<&'a str>,
}

impl Moving<'_> {
    /// Moves the session's marker from `expected` to `now` and applies `edit` to its state;
    /// whether the session was there, live, with that marker.
    fn move_marker(&self, conn: &Connection, edit: &StateEdit, expected: &str) -> Result<bool> {
        let key = self.key;
        let fixed: [Option<&str>; 6] = [
            Some(key.app_name()),
            Some(key.user_id()),
            Some(key.session_id()),
            Some(self.now),
            Some(expected),
            self.expiry_at,
        ];
        let run = |sql: &str, extra: &[&str]| -> Result<bool> {
            let params = fixed.iter().copied().chain(extra.iter().map(|p| Some(*p)));
            Ok(execute(conn, "update session", sql, params_from_iter(params))? > 0)
        };
        match edit {
            StateEdit::Nothing => run(edited_sql!("session_commit", ""), &[]),
            StateEdit::Patch(patch) => run(edited_sql!("session_commit", "state = json_patch(state, ?7),"), &[patch]),
            StateEdit::Paths { .. } => {
                let mut chunks = edit.chunks(fixed.len() + 1).into_iter();
                let Some(first) = chunks.next() else { return run(edited_sql!("session_commit", ""), &[]) };
                let moved = run(
                    &sql!("session_commit").replace("/*state*/", &format!("state = {},", first.expression)),
                    &first.params,
                )?;
                if moved {
                    // The statements after the first number their paths after the three key params.
                    let key_params = [key.app_name(), key.user_id(), key.session_id()];
                    drop(chunks);
                    for chunk in edit.chunks(key_params.len() + 1).into_iter().skip(1) {
                        let sql = sql!("session_state_edit").replace("/*state*/", &chunk.expression);
                        let params = params_from_iter(key_params.iter().chain(&chunk.params));
                        execute(conn, "update session", &sql, params)?;
                    }
                }
                Ok(moved)
            }
        }
    }
}
