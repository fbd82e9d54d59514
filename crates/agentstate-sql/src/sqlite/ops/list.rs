//! Session lists: a page in the list's order from its index, and counts.

use std::collections::HashMap;

use agentstate::store::{ListQuery, merge_scopes};
use agentstate::{Map, Result, Session, SessionKey, Value};
use rusqlite::{Connection, Row, params};

use super::{RawSessionRow, SessionRow, Shared, now_text, snapshot};
use crate::codec::{parse_state, sqlite_text};
use crate::list::ListStatements;
use crate::sqlite::sqlite_error;

/// Most sessions a page of a list runs on its caller's thread with: each costs its row, its
/// state's parsing and the merge of the user's and app's state (a few microseconds for the
/// states a sidebar shows), so such a page takes about what handing it to a blocking thread and
/// back would add.
pub(in crate::sqlite) const SHORT_LIST_SESSIONS: usize = 32;

/// Whether `query` reads few enough sessions to run on the caller's thread: a page of at most
/// [`SHORT_LIST_SESSIONS`] with no filter (a filter may pass over most of the app's sessions
/// before it fills a page).
pub(in crate::sqlite) fn short_list(query: &ListQuery) -> bool {
    query.filter.is_empty() && query.limit.is_some_and(|n| n <= SHORT_LIST_SESSIONS)
}

pub(in crate::sqlite) fn list(conn: &Connection, query: &ListQuery) -> Result<Vec<Session>> {
    snapshot(conn, || {
        // From the start: before every stored time ('') or, newest first, after all of them ('~').
        let (time, after_user, after_id) = match &query.after {
            Some(c) => (sqlite_text(c.at_micros)?, c.user_id.clone(), c.session_id.clone()),
            None => (if query.descending { "~" } else { "" }.to_owned(), String::new(), String::new()),
        };
        let limit = query.limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let now = now_text(query.now_micros)?;
        static STATEMENTS: ListStatements = ListStatements::new();
        let sql = STATEMENTS.get(
            query,
            [sql!("sessions_list"), sql!("sessions_list_desc")],
            ["s.user_id = ?6", "?6 IS NULL"],
        );
        let mut stmt = conn.prepare_cached(sql).map_err(|e| sqlite_error("list sessions", &e))?;
        let row =
            |r: &Row<'_>| Ok((r.get::<_, String>("user_id")?, r.get::<_, String>("id")?, RawSessionRow::read(r)?));
        let (filter, user) = (&query.filter, query.user_id.as_deref());
        let bound = |micros: Option<i64>, open: &str| micros.map_or_else(|| Ok(open.to_owned()), sqlite_text);
        let (updated_from, updated_to) =
            (bound(filter.update_time.from_micros, "")?, bound(filter.update_time.to_micros, "~")?);
        let (created_from, created_to) =
            (bound(filter.create_time.from_micros, "")?, bound(filter.create_time.to_micros, "~")?);
        let name = filter.display_name.as_deref();
        let parameters = params![
            query.app_name,
            time,
            after_user,
            after_id,
            limit,
            user,
            now,
            updated_from,
            updated_to,
            created_from,
            created_to,
            name
        ];
        let rows = stmt
            .query_map(parameters, row)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| sqlite_error("list sessions", &e))?;

        let app = Shared::App(&query.app_name).read(conn)?.unwrap_or_default();
        let mut users: HashMap<String, Map<String, Value>> = HashMap::new();
        let mut sessions = Vec::with_capacity(rows.len());
        for (user_id, id, row) in rows {
            let key = SessionKey::from_storage(query.app_name.as_str(), user_id, id);
            if !users.contains_key(key.user_id()) {
                let state = Shared::User(key.app_name(), key.user_id()).read(conn)?.unwrap_or_default();
                users.insert(key.user_id().to_owned(), state);
            }
            let row = SessionRow::decode(row)?;
            let merged = merge_scopes(&parse_state(&row.state)?, &app, &users[key.user_id()]);
            sessions.push(row.session(key, merged, Vec::new()));
        }
        Ok(sessions)
    })
}

pub(in crate::sqlite) fn count_sessions(conn: &Connection, query: &ListQuery) -> Result<usize> {
    let now = now_text(query.now_micros)?;
    conn.prepare_cached(sql!("sessions_count"))
        .and_then(|mut stmt| stmt.query_row(params![query.app_name, query.user_id, now], |r| r.get::<_, i64>(0)))
        .map(|n| usize::try_from(n).unwrap_or_default())
        .map_err(|e| sqlite_error("count sessions", &e))
}
