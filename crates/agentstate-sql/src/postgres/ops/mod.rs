//! The PostgreSQL statements of each operation: every one is a single statement, so one round
//! trip and one atomic transaction. Those it shares with MySQL are [`crate::shared`]'s.

mod commit;
mod load;

use agentstate::store::{
    EventCopy, EventCursor, EventQuery, EventSelect, HistorySnapshot, ListQuery, StateOwner, UserDataCounts, ValueSwap,
    merge_scopes,
};
use agentstate::{Event, Map, Result, Session, SessionKey, Value};
use serde_json::json;
use sqlx::Row as _;
use sqlx::postgres::PgRow;
use sqlx::types::Json;

pub(super) use commit::{commit, create};
pub(super) use common::*;
pub(super) use load::get_session;

use crate::codec::{self, naive};
use crate::list::ListStatements;
use crate::pool::{keyed, sqlx_error};
use crate::shared::expiry_time;

crate::shared::operations!(sqlx::Postgres);

/// `db.system.name`.
pub(crate) const SYSTEM: &str = "postgresql";
crate::memories::memory_operations!(sqlx::Postgres);
crate::leases::lease_operations!(sqlx::Postgres);
crate::artifacts::artifact_operations!(sqlx::Postgres);

/// A memory search, one statement (`memory_search.sql`): the alternatives as tsqueries (each
/// looked up on its own), the limit, owner and time, and how many of the newest memories each
/// alternative looks among before asking the index.
async fn memory_search(
    pool: &sqlx::PgPool,
    search: &agentstate::store::MemorySearch,
) -> Result<Vec<sqlx::postgres::PgRow>, sqlx::Error> {
    let alternatives: Vec<String> =
        search.any_of.iter().filter(|terms| !terms.is_empty()).map(|terms| terms.join(" & ")).collect();
    if alternatives.is_empty() {
        return Ok(Vec::new());
    }
    let limit = i64::try_from(search.limit).unwrap_or(i64::MAX);
    sqlx::query(sql!("memory_search"))
        .bind(alternatives)
        .bind(limit)
        .bind(search.owner.app_name().to_owned())
        .bind(search.owner.user_id().to_owned())
        .bind(search.now_micros)
        .bind(limit.saturating_mul(crate::memories::RECENT_WINDOW))
        .fetch_all(pool)
        .await
}

pub(super) fn object(value: Value, what: &str) -> Result<Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(codec::corrupt(format!("{what} holds {other} instead of a JSON object"))),
    }
}

fn get_json(row: &PgRow, column: &str) -> Result<Value> {
    row.try_get::<Json<Value>, _>(column).map(|j| j.0).map_err(|e| sqlx_error(&format!("reading {column}"), e))
}

fn get<'r, T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>>(
    row: &'r PgRow,
    column: &str,
) -> Result<T> {
    row.try_get::<T, _>(column).map_err(|e| sqlx_error(&format!("reading {column}"), e))
}

/// Events aggregated as `[{"id", "invocation_id", "micros", "event_data"}, …]`, in the order given.
fn decode_events(value: Value) -> Result<Vec<Event>> {
    let Value::Array(rows) = value else { return Err(codec::corrupt("event window is not a JSON array".into())) };
    let mut events = Vec::with_capacity(rows.len());
    for row in rows {
        let Value::Object(mut row) = row else { return Err(codec::corrupt("event row is not an object".into())) };
        let text = |row: &mut Map<String, Value>, column: &str| match row.remove(column) {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        let (id, invocation) = (text(&mut row, "id"), text(&mut row, "invocation_id"));
        let micros = row.get("micros").and_then(Value::as_i64).unwrap_or_default();
        let data = match row.remove("event_data") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(data) => data,
        };
        events.push(codec::decode_event(data, id, invocation, micros)?);
    }
    Ok(events)
}

/// The handle of a `session_load` or `sessions_list` row.
fn stored_session(row: &PgRow, key: SessionKey, merged: Map<String, Value>, events: Vec<Event>) -> Result<Session> {
    let labels = row
        .try_get::<Option<Json<Value>>, _>("labels")
        .map_err(|e| sqlx_error("reading labels", e))?
        .map(|labels| labels.0.to_string());
    let attributes = codec::attributes(get(row, "display_name")?, labels.as_deref(), get(row, "expires")?)?;
    Ok(Session::from_storage(key, merged, events, get::<i64>(row, "marker")?)
        .created_at(get(row, "created")?)
        .with_attributes(attributes))
}

pub(super) async fn list(pool: &Pool, query: &ListQuery) -> Result<Vec<Session>> {
    let cursor = query.after.as_ref();
    let limit = query.limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    static STATEMENTS: ListStatements = ListStatements::new();
    let sql = STATEMENTS.get(
        query,
        [sql!("sessions_list"), sql!("sessions_list_desc")],
        ["s.user_id = $2", "$2::varchar IS NULL"],
    );
    let filter = &query.filter;
    let time = |micros: Option<i64>| micros.map(naive).transpose();
    let rows = sqlx::query(sql)
        .bind(&query.app_name)
        .bind(query.user_id.as_deref())
        .bind(time(cursor.map(|c| c.at_micros))?)
        .bind(cursor.map_or("", |c| c.user_id.as_str()))
        .bind(cursor.map_or("", |c| c.session_id.as_str()))
        .bind(limit)
        .bind(expiry_time(query.now_micros)?)
        .bind(time(filter.update_time.from_micros)?)
        .bind(time(filter.update_time.to_micros)?)
        .bind(time(filter.create_time.from_micros)?)
        .bind(time(filter.create_time.to_micros)?)
        .bind(filter.display_name.as_deref())
        .bind(filter.labels_object().map(Json))
        .bind(filter.state_object().map(Json))
        .fetch_all(pool)
        .await
        .map_err(|e| sqlx_error("listing sessions", e))?;
    rows.iter()
        .map(|row| {
            let key = SessionKey::from_storage(
                query.app_name.as_str(),
                get::<String>(row, "user_id")?,
                get::<String>(row, "id")?,
            );
            let session = object(get_json(row, "state")?, "sessions.state")?;
            let app = object(get_json(row, "app_state")?, "app_states.state")?;
            let user = object(get_json(row, "user_state")?, "user_states.state")?;
            stored_session(row, key, merge_scopes(&session, &app, &user), Vec::new())
        })
        .collect()
}

pub(super) async fn events(pool: &Pool, query: &EventQuery) -> Result<Option<Vec<Event>>> {
    let EventQuery { key, select, now_micros } = query;
    let now = expiry_time(*now_micros)?;
    // Each statement is events_present.sql (is the session there, live at $4) and its own tail.
    macro_rules! with_present {
        ($name:literal) => {
            concat!(sql!("events_present"), sql!($name))
        };
    }
    let statement = match select {
        // Both directions take the same parameters: a cursor, the page size, the lower bound.
        EventSelect::Page { after: cursor, since_micros, limit }
        | EventSelect::Latest { before: cursor, since_micros, limit } => {
            let statement = match select {
                EventSelect::Page { .. } => with_present!("events_page"),
                _ => with_present!("events_latest"),
            };
            keyed(statement, key)
                .bind(now)
                .bind(cursor.as_ref().map(|c| naive(c.timestamp_micros)).transpose()?)
                .bind(cursor.as_ref().map_or("", |c| c.event_id.as_str()))
                .bind(i64::try_from(*limit).unwrap_or(i64::MAX))
                .bind(since_micros.map(naive).transpose()?)
        }
        EventSelect::Id(id) => keyed(with_present!("event_get"), key).bind(now).bind(id.as_str()),
        EventSelect::FirstOfInvocation(invocation) => {
            keyed(with_present!("invocation_first"), key).bind(now).bind(invocation.as_str())
        }
    };
    let row = statement.fetch_one(pool).await.map_err(|e| sqlx_error("reading events", e))?;
    if !get::<bool>(&row, "present")? {
        return Ok(None);
    }
    decode_events(get_json(&row, "events")?).map(Some)
}

pub(super) async fn put_snapshots(pool: &Pool, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
    let rows: Vec<Value> = snapshots
        .iter()
        .map(|s| json!({"at_micros": s.at.timestamp_micros, "at_event_id": s.at.event_id, "state": s.state}))
        .collect();
    keyed(sql!("history_snapshots_put"), key)
        .bind(Json(rows))
        .execute(pool)
        .await
        .map(drop)
        .map_err(|e| sqlx_error("keeping history snapshots", e))
}

/// Copies events inside the database; `None` when some must move forward in time (the caller
/// then copies them one commit at a time).
pub(super) async fn copy_events(pool: &Pool, copy: &EventCopy) -> Result<Option<Option<EventCursor>>> {
    let row = keyed(sql!("events_copy"), &copy.from)
        .bind(copy.to.session_id())
        .bind(naive(copy.upto.timestamp_micros)?)
        .bind(&copy.upto.event_id)
        .bind(naive(copy.to_marker)?)
        .fetch_one(pool)
        .await
        .map_err(|e| sqlx_error("copying events", e))?;
    if get::<bool>(&row, "early")? {
        return Ok(None);
    }
    Ok(Some((get::<i64>(&row, "copied")? > 0).then(|| copy.upto.clone())))
}

pub(super) async fn drop_events_before(
    pool: &Pool,
    key: &SessionKey,
    cut_micros: i64,
    boundary: &HistorySnapshot,
) -> Result<usize> {
    let dropped: i64 = sqlx::query_scalar(sql!("events_drop"))
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .bind(naive(cut_micros)?)
        .bind(Json(&boundary.state))
        .bind(boundary.at.timestamp_micros)
        .bind(cut_micros)
        .fetch_one(pool)
        .await
        .map_err(|e| sqlx_error("dropping old events", e))?;
    Ok(usize::try_from(dropped).unwrap_or_default())
}

pub(super) async fn delete_expired(pool: &Pool, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>> {
    let swept: Vec<(String, String, String)> = sqlx::query_as(sql!("sessions_expired_delete"))
        .bind(naive(before_micros)?)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(pool)
        .await
        .map_err(|e| sqlx_error("sweeping expired sessions", e))?;
    Ok(swept.into_iter().map(|(app, user, id)| SessionKey::from_storage(app, user, id)).collect())
}

pub(super) async fn erase_user(pool: &Pool, app: &str, user: &str) -> Result<UserDataCounts> {
    let read = |e| sqlx_error("erasing a user", e);
    let row = sqlx::query(sql!("user_erase")).bind(app).bind(user).fetch_one(pool).await.map_err(read)?;
    crate::codec::user_data_counts(|name| row.try_get::<i64, _>(name)).map_err(read)
}

/// An owner's app, user (or NULL) and session (or NULL).
fn owner_parts(owner: &StateOwner) -> (&str, Option<&str>, Option<&str>) {
    match owner {
        StateOwner::App(app) => (app, None, None),
        StateOwner::User { app, user } => (app, Some(user), None),
        StateOwner::Session(key) => (key.app_name(), Some(key.user_id()), Some(key.session_id())),
    }
}

pub(super) async fn stored_state(pool: &Pool, owner: &StateOwner) -> Result<Map<String, Value>> {
    let (app, user, session) = owner_parts(owner);
    let state: Option<Json<Value>> = sqlx::query_scalar(sql!("state_get"))
        .bind(app)
        .bind(user)
        .bind(session)
        .fetch_optional(pool)
        .await
        .map_err(|e| sqlx_error("reading state", e))?;
    match state.map(|Json(v)| v) {
        Some(Value::Object(map)) => Ok(map),
        _ => Ok(Map::new()),
    }
}

/// A write of app or user state without a session, logged: one statement.
pub(super) async fn update_shared_state(pool: &Pool, update: &agentstate::store::SharedStateUpdate) -> Result<()> {
    let now = naive(update.now_micros)?;
    let query = match update.owner.shared()? {
        (app, None) => sqlx::query(sql!("app_state_merge")).bind(app),
        (app, Some(user)) => sqlx::query(sql!("user_state_merge")).bind(app).bind(user),
    };
    let write = agentstate::store::SharedStateWrite::of(update);
    query
        .bind(Json(&update.delta))
        .bind(&update.deleted)
        .bind(now)
        .bind(write.at_micros)
        .bind(&write.id)
        .bind(&write.origin)
        .bind(crate::state_log::keys_text(&write.set))
        .bind(crate::state_log::keys_text(&write.deleted))
        .execute(pool)
        .await
        .map(drop)
        .map_err(|e| sqlx_error("writing shared state", e))
}

pub(super) async fn swap_values(pool: &Pool, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
    let (app, user, session) = owner_parts(owner);
    let mut swapped = 0;
    for swap in swaps {
        let n: i64 = sqlx::query_scalar(sql!("state_swap"))
            .bind(app)
            .bind(user)
            .bind(session)
            .bind(&swap.key)
            .bind(Json(&swap.old))
            .bind(Json(&swap.new))
            .fetch_one(pool)
            .await
            .map_err(|e| sqlx_error("rewriting state", e))?;
        swapped += usize::try_from(n).unwrap_or_default();
    }
    Ok(swapped)
}
