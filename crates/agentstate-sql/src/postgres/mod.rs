//! PostgreSQL: the reference's v1 schema (JSONB state, naive-UTC timestamps); every operation is
//! one statement, so one round trip and one atomic transaction. Many agentstate processes can
//! share one database: the stale check and the merges happen in the database.

use std::sync::Arc;

use agentstate::store::{
    CommitOutcome, EventCommit, EventCursor, EventQuery, EventWindow, HistorySnapshot, ListQuery, NewSession,
    RawSession, SessionStore, StateOwner, StoredEvent, ValueSwap, merge_scopes,
};
use agentstate::{ConflictKind, Error, Event, Map, Result, Session, SessionKey, UserData, Value};
use async_trait::async_trait;
use serde_json::json;
use sqlx::postgres::{PgPool, PgRow};
use sqlx::types::Json;
use sqlx::{Connection, Row};

use crate::codec::{self, naive};
use crate::pool::{self, PoolOptions, is_unique_violation, keyed, sqlx_error};
use crate::schema::{self, Found, Schema};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!("../../sql/postgres/", $name, ".sql"))
    };
}

/// The PostgreSQL session store.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    schema: Schema,
}

fn object(value: Value, what: &str) -> Result<Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(codec::corrupt(format!("{what} holds {other} instead of a JSON object"))),
    }
}

fn delta_or_null(delta: &Map<String, Value>) -> Option<Json<&Map<String, Value>>> {
    (!delta.is_empty()).then_some(Json(delta))
}

impl PostgresStore {
    /// A session's row, merged state and window of events (each made by `event` from the row's
    /// id, invocation id, time and `event_data` text, oldest first), in one statement.
    async fn load<E>(
        &self,
        key: &SessionKey,
        window: EventWindow,
        event: impl Fn(String, String, i64, Option<&str>) -> Result<E>,
    ) -> Result<Option<(PgRow, Map<String, Value>, Vec<E>)>> {
        let after = window.after_micros.map(naive).transpose()?;
        let limit = window.recent.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = keyed(sql!("session_load"), key)
            .bind(after)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| sqlx_error("loading a session", e))?;
        // One row for the session (the one with a marker), one per event, in any order.
        let mut session_row = None;
        let mut events = Vec::with_capacity(rows.len());
        for row in rows {
            let Some(id) = get::<Option<String>>(&row, "id")? else {
                session_row = Some(row);
                continue;
            };
            let invocation_id = get::<Option<String>>(&row, "invocation_id")?.unwrap_or_default();
            let micros = get::<Option<chrono::NaiveDateTime>>(&row, "event_time")?.map_or(0, codec::micros);
            let made = event(id.clone(), invocation_id, micros, get(&row, "event_data")?)?;
            events.push((micros, id, made));
        }
        let Some(first) = session_row else { return Ok(None) };
        // Oldest first; the rows came newest first, which this sort reverses in one pass.
        events.sort_by(|(a, x, _), (b, y, _)| a.cmp(b).then_with(|| x.cmp(y)));
        let session = object(get_json(&first, "state")?, "sessions.state")?;
        let app = object(get_json(&first, "app_state")?, "app_states.state")?;
        let user = object(get_json(&first, "user_state")?, "user_states.state")?;
        let events = events.into_iter().map(|(_, _, event)| event).collect();
        Ok(Some((first, merge_scopes(&session, &app, &user), events)))
    }

    /// Connects and prepares the schema (created if absent; serialised across processes by an
    /// advisory lock).
    pub async fn connect(options: &PoolOptions) -> Result<Self> {
        let pool = pool::connect(options).await?;
        let schema = prepare_schema(&pool, &options.redacted()).await?;
        Ok(Self { pool, schema })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The schema the database was found with, or created with.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }
}

async fn prepare_schema(pool: &PgPool, location: &str) -> Result<Schema> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let mut conn = pool.acquire().await.map_err(fail)?;
    let mut tx = conn.begin().await.map_err(fail)?;
    // Any constant: serialises schema creation of concurrent starters.
    sqlx::query("SELECT pg_advisory_xact_lock(7370656)").execute(&mut *tx).await.map_err(fail)?;
    let tables = sqlx::query_scalar(
        "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(fail)?;
    let mut found = Found { tables, ..Found::default() };
    if found.has_table("adk_internal_metadata") {
        found.version = sqlx::query_scalar("SELECT value FROM adk_internal_metadata WHERE key = 'schema_version'")
            .fetch_optional(&mut *tx)
            .await
            .map_err(fail)?;
    }
    if found.has_table("events") {
        let rows = sqlx::query(
            "SELECT column_name::text AS name, data_type::text AS type FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'events'",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(fail)?;
        found.event_columns = rows.iter().map(|r| Ok((get(r, "name")?, get(r, "type")?))).collect::<Result<_>>()?;
    }
    found.indexes =
        sqlx::query_scalar("SELECT indexname::text AS name FROM pg_indexes WHERE schemaname = current_schema()")
            .fetch_all(&mut *tx)
            .await
            .map_err(fail)?;
    let schema = schema::check(&found, location)?;
    if !found.is_complete() {
        sqlx::raw_sql(sql!("schema")).execute(&mut *tx).await.map_err(fail)?;
    }
    tx.commit().await.map_err(fail)?;
    Ok(schema)
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

/// An `event_get`/`invocation_first` row as an event.
fn event_of(row: &PgRow) -> Result<Event> {
    let data = row
        .try_get::<Option<Json<Value>>, _>("event_data")
        .map_err(|e| sqlx_error("reading event_data", e))?
        .map_or_else(|| Value::Object(Map::new()), |j| j.0);
    codec::decode_event(data, get(row, "id")?, get(row, "invocation_id")?, get(row, "micros")?)
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

#[async_trait]
impl SessionStore for PostgresStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        let NewSession { key, state, create_time_micros, attributes, history_start } = new;
        let row = keyed(sql!("session_create"), &key)
            .bind(Json(&state.session))
            .bind(Json(&state.user))
            .bind(Json(&state.app))
            .bind(naive(create_time_micros)?)
            .bind(attributes.display_name.as_deref())
            .bind((!attributes.labels.is_empty()).then_some(Json(&attributes.labels)))
            .bind(attributes.expire_time_micros.map(naive).transpose()?)
            .bind(history_start.as_ref().map(Json))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sqlx_error("creating a session", e))?;
        if get::<i64>(&row, "created")? == 0 {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() });
        }
        let app = object(get_json(&row, "app_state")?, "app_states.state")?;
        let user = object(get_json(&row, "user_state")?, "user_states.state")?;
        let merged = merge_scopes(&state.session, &app, &user);
        Ok(Session::from_storage(key, merged, Vec::<Event>::new(), create_time_micros)
            .created_at(create_time_micros)
            .with_attributes((!attributes.is_empty()).then(|| Arc::new(attributes))))
    }

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        let decode = |id, invocation_id, micros, data: Option<&str>| {
            codec::decode_event_text(data, id, invocation_id, || Ok(micros))
        };
        let Some((row, merged, events)) = self.load(key, window, decode).await? else { return Ok(None) };
        Ok(Some(stored_session(&row, key.clone(), merged, events)?))
    }

    async fn get_raw(&self, key: &SessionKey, window: EventWindow) -> Result<Option<RawSession>> {
        let stored = |id, invocation_id, timestamp_micros, data: Option<&str>| {
            Ok(StoredEvent { id, invocation_id, timestamp_micros, data: data.map(str::to_owned) })
        };
        let Some((row, merged, events)) = self.load(key, window, stored).await? else { return Ok(None) };
        let session = stored_session(&row, key.clone(), merged, Vec::<Event>::new())?;
        Ok(Some(RawSession { session, stored_events: Some(events) }))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let cursor = query.after.as_ref();
        let limit = query.limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = sqlx::query(sql!("sessions_list"))
            .bind(&query.app_name)
            .bind(query.user_id.as_deref())
            .bind(cursor.map(|c| naive(c.last_update_micros)).transpose()?)
            .bind(cursor.map_or("", |c| c.user_id.as_str()))
            .bind(cursor.map_or("", |c| c.session_id.as_str()))
            .bind(limit)
            .fetch_all(&self.pool)
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
                let merged = merge_scopes(&session, &app, &user);
                stored_session(row, key, merged, Vec::new())
            })
            .collect()
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        keyed(sql!("session_delete"), key)
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| sqlx_error("deleting a session", e))
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let EventQuery { key, after, since_micros, limit } = query;
        let row = keyed(sql!("events_page"), key)
            .bind(after.as_ref().map(|c| naive(c.timestamp_micros)).transpose()?)
            .bind(after.as_ref().map_or("", |c| c.event_id.as_str()))
            .bind(i64::try_from(*limit).unwrap_or(i64::MAX))
            .bind(since_micros.map(naive).transpose()?)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading events", e))?;
        if !get::<bool>(&row, "present")? {
            return Ok(None);
        }
        decode_events(get_json(&row, "events")?).map(Some)
    }

    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let row = keyed(sql!("history_snapshot"), key)
            .bind(at_or_before_micros)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading a history snapshot", e))?;
        row.map(|row| {
            Ok(HistorySnapshot {
                at: EventCursor { timestamp_micros: get(&row, "at_micros")?, event_id: get(&row, "at_event_id")? },
                state: object(get_json(&row, "state")?, "agentstate_state_snapshots.state")?,
            })
        })
        .transpose()
    }

    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        let rows: Vec<Value> = snapshots
            .iter()
            .map(|s| json!({"at_micros": s.at.timestamp_micros, "at_event_id": s.at.event_id, "state": s.state}))
            .collect();
        keyed(sql!("history_snapshots_put"), key)
            .bind(Json(rows))
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| sqlx_error("keeping history snapshots", e))
    }

    async fn copy_events(
        &self,
        from: &SessionKey,
        to: &SessionKey,
        upto: &EventCursor,
        to_marker: i64,
    ) -> Result<Option<EventCursor>> {
        let row = keyed(sql!("events_copy"), from)
            .bind(to.session_id())
            .bind(naive(upto.timestamp_micros)?)
            .bind(&upto.event_id)
            .bind(naive(to_marker)?)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sqlx_error("copying events", e))?;
        if get::<bool>(&row, "early")? {
            return agentstate::store::replay::copy_events(self, from, to, upto, to_marker).await;
        }
        Ok((get::<i64>(&row, "copied")? > 0).then(|| upto.clone()))
    }

    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        let row = keyed(sql!("event_get"), key)
            .bind(event_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading an event", e))?;
        row.map(|row| event_of(&row)).transpose()
    }

    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        let row = keyed(sql!("invocation_first"), key)
            .bind(invocation_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading an invocation", e))?;
        row.map(|row| event_of(&row)).transpose()
    }

    async fn users_with_session(&self, app: &str, session_id: &str) -> Result<Vec<String>> {
        sqlx::query_scalar(sql!("session_users"))
            .bind(app)
            .bind(session_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| sqlx_error("finding sessions", e))
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>) -> Result<bool> {
        let done = keyed(sql!("session_expire_put"), key)
            .bind(expire_micros.map(naive).transpose()?)
            .execute(&self.pool)
            .await
            .map_err(|e| sqlx_error("setting an expire time", e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let dropped: i64 = sqlx::query_scalar(sql!("events_drop"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .bind(naive(cut_micros)?)
            .bind(Json(&boundary.state))
            .bind(boundary.at.timestamp_micros)
            .bind(cut_micros)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sqlx_error("dropping old events", e))?;
        Ok(usize::try_from(dropped).unwrap_or_default())
    }

    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        let n: Option<i64> = keyed(sql!("event_count"), key)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("counting events", e))?
            .map(|row| row.try_get("n"))
            .transpose()
            .map_err(|e| sqlx_error("counting events", e))?;
        Ok(n.map(|n| usize::try_from(n).unwrap_or_default()))
    }

    async fn apps(&self) -> Result<Vec<String>> {
        sqlx::query_scalar(sql!("apps")).fetch_all(&self.pool).await.map_err(|e| sqlx_error("listing apps", e))
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        sqlx::query_scalar(sql!("users"))
            .bind(app)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| sqlx_error("listing users", e))
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let (app, user, session) = owner_parts(owner);
        let state: Option<Json<Value>> = sqlx::query_scalar(sql!("state_get"))
            .bind(app)
            .bind(user)
            .bind(session)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading state", e))?;
        match state.map(|Json(v)| v) {
            Some(Value::Object(map)) => Ok(map),
            _ => Ok(Map::new()),
        }
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
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
                .fetch_one(&self.pool)
                .await
                .map_err(|e| sqlx_error("rewriting state", e))?;
            swapped += usize::try_from(n).unwrap_or_default();
        }
        Ok(swapped)
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        let done = keyed(sql!("event_rewrite"), key)
            .bind(&event.id)
            .bind(codec::event_data(event)?)
            .execute(&self.pool)
            .await
            .map_err(|e| sqlx_error("rewriting an event", e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        sqlx::query_scalar(sql!("metadata_get"))
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading metadata", e))
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        sqlx::query(sql!("metadata_put"))
            .bind(name)
            .bind(value)
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| sqlx_error("writing metadata", e))
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserData> {
        let row = sqlx::query(sql!("user_erase"))
            .bind(app)
            .bind(user)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sqlx_error("erasing a user", e))?;
        user_data_of(&row)
    }

    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        let row = sqlx::query(sql!("user_data"))
            .bind(app)
            .bind(user)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| sqlx_error("counting a user's data", e))?;
        user_data_of(&row)
    }

    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        let done = sqlx::query(sql!("sessions_expired_delete"))
            .bind(naive(before_micros)?)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .execute(&self.pool)
            .await
            .map_err(|e| sqlx_error("sweeping expired sessions", e))?;
        Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let EventCommit { key, expected_last_update_micros, event, timestamp_micros, delta, deleted } = commit;
        let result = keyed(sql!("event_commit"), &key)
            .bind(&event.id)
            .bind(&event.invocation_id)
            .bind(naive(timestamp_micros)?)
            .bind(Json(event.as_ref()))
            .bind(naive(expected_last_update_micros)?)
            .bind(Json(&delta.session))
            .bind(delta_or_null(&delta.user))
            .bind(delta_or_null(&delta.app))
            .bind(&deleted.session)
            .bind(&deleted.user)
            .bind(&deleted.app)
            .fetch_one(&self.pool)
            .await;
        let row = match result {
            Ok(row) => row,
            // Only a writer outside agentstate can insert this id between our check and insert.
            Err(e) if is_unique_violation(&e) => {
                return Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: event.id.clone() } });
            }
            Err(e) => return Err(sqlx_error("appending an event", e)),
        };
        if get::<i64>(&row, "committed")? == 1 {
            return Ok(CommitOutcome::Committed);
        }
        if let Some(invocation) = get::<Option<String>>(&row, "dup_invocation_id")? {
            let data = row
                .try_get::<Option<Json<Value>>, _>("dup_event_data")
                .map_err(|e| sqlx_error("reading dup_event_data", e))?
                .map_or_else(|| Value::Object(Map::new()), |j| j.0);
            let micros = get::<Option<i64>>(&row, "dup_micros")?.unwrap_or_default();
            let existing = codec::decode_event(data, event.id.clone(), invocation, micros)?;
            return if existing.same_as_retry(&event) {
                Ok(CommitOutcome::Duplicate(Box::new(existing)))
            } else {
                Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: event.id.clone() } })
            };
        }
        match get::<Option<i64>>(&row, "current_marker")? {
            None => Err(Error::NotFound { session_id: key.session_id().to_owned() }),
            // Changed since the caller loaded it, or by a writer that committed while this
            // statement waited for the row lock.
            Some(_) => Err(Error::stale()),
        }
    }
}

/// A row of counts (`sessions`, `events`, `user_keys`).
fn user_data_of(row: &PgRow) -> Result<UserData> {
    let count = |name| {
        row.try_get::<i64, _>(name)
            .map(|n| usize::try_from(n).unwrap_or_default())
            .map_err(|e| sqlx_error("reading counts", e))
    };
    Ok(UserData { sessions: count("sessions")?, events: count("events")?, user_state_keys: count("user_keys")? })
}

/// An owner's app, user (or NULL) and session (or NULL).
fn owner_parts(owner: &StateOwner) -> (&str, Option<&str>, Option<&str>) {
    match owner {
        StateOwner::App(app) => (app, None, None),
        StateOwner::User { app, user } => (app, Some(user), None),
        StateOwner::Session(key) => (key.app_name(), Some(key.user_id()), Some(key.session_id())),
    }
}
