//! MySQL and MariaDB: the reference's v1 schema (LONGTEXT JSON, DATETIME(6)). Neither has
//! data-modifying CTEs, so an append is one transaction that locks the session row, then the user
//! row, then the app row (always in that order) and merges state key by key under those locks.
//! Deadlocks and lock-wait timeouts roll the whole transaction back, so it is retried.

use agentstate::store::{
    CommitOutcome, EventCommit, EventCursor, EventQuery, EventWindow, HistorySnapshot, ListQuery, NewSession,
    RawSession, SessionStore, StateOwner, StoredEvent, ValueSwap, merge_scopes,
};
use agentstate::{ConflictKind, Error, Event, Map, Result, Session, SessionKey, UserData, Value};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::NaiveDateTime;
use sqlx::mysql::{MySqlConnection, MySqlPool, MySqlRow};
use sqlx::{Connection, Row};

use crate::codec::{self, merge_row, micros, naive, parse_state, state_text};
use crate::pool::{self, PoolOptions, is_unique_violation, keyed, sqlx_error};
use crate::schema::{self, Found, Schema};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!("../../sql/mysql/", $name, ".sql"))
    };
}

/// Attempts of a transaction that deadlocked or timed out waiting for a lock.
const ATTEMPTS: usize = 5;

/// The MySQL/MariaDB session store.
#[derive(Debug, Clone)]
pub struct MySqlStore {
    pool: MySqlPool,
    schema: Schema,
}

fn is_lock_failure(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().is_some_and(|m| matches!(m.number(), 1213 | 1205))
        }
        _ => false,
    }
}

/// What a transaction body can fail with: a driver error (maybe retried) or a final answer.
enum Failure {
    Sql(&'static str, sqlx::Error),
    Done(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Done(e)
    }
}

type Step<T> = std::result::Result<T, Failure>;

/// One attempt of a transaction body, borrowing the connection.
type Attempt<'c, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Step<T>> + Send + 'c>>;

fn sql_step(what: &'static str) -> impl FnOnce(sqlx::Error) -> Failure {
    move |e| Failure::Sql(what, e)
}

impl MySqlStore {
    /// Connects and prepares the schema (created if absent; serialised across processes by a
    /// named lock).
    pub async fn connect(options: &PoolOptions) -> Result<Self> {
        let pool = pool::connect(options).await?;
        let schema = prepare_schema(&pool, &options.redacted()).await?;
        Ok(Self { pool, schema })
    }

    /// The connection pool.
    pub fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    /// The schema the database was found with, or created with.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Runs `body` in a transaction, again if it deadlocked or timed out on a lock.
    async fn transaction<T, F>(&self, what: &str, mut body: F) -> Result<T>
    where
        F: for<'c> FnMut(&'c mut MySqlConnection) -> Attempt<'c, T>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut conn = self.pool.acquire().await.map_err(|e| sqlx_error(what, e))?;
            let mut tx = conn.begin().await.map_err(|e| sqlx_error(what, e))?;
            match body(&mut tx).await {
                Ok(value) => {
                    tx.commit().await.map_err(|e| sqlx_error(what, e))?;
                    return Ok(value);
                }
                Err(Failure::Sql(_, e)) if is_lock_failure(&e) && attempt < ATTEMPTS => {}
                Err(failure) => return finish(what, Err(failure)),
            }
        }
    }
}

async fn prepare_schema(pool: &MySqlPool, location: &str) -> Result<Schema> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let mut conn = pool.acquire().await.map_err(fail)?;
    // DDL commits implicitly in MySQL, so a named lock (not a transaction) serialises starters.
    sqlx::query("SELECT GET_LOCK('agentstate_schema', 60)").execute(&mut *conn).await.map_err(fail)?;
    let result = inspect_and_create(&mut conn, location).await;
    sqlx::query("SELECT RELEASE_LOCK('agentstate_schema')").execute(&mut *conn).await.map_err(fail)?;
    result
}

async fn inspect_and_create(conn: &mut MySqlConnection, location: &str) -> Result<Schema> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let tables = sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) AS name FROM information_schema.tables WHERE table_schema = DATABASE()",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(fail)?;
    let mut found = Found { tables, ..Found::default() };
    if found.has_table("adk_internal_metadata") {
        found.version = sqlx::query_scalar("SELECT value FROM adk_internal_metadata WHERE `key` = 'schema_version'")
            .fetch_optional(&mut *conn)
            .await
            .map_err(fail)?;
    }
    if found.has_table("events") {
        let rows = sqlx::query(
            "SELECT CAST(column_name AS CHAR) AS name, CAST(data_type AS CHAR) AS type FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = 'events'",
        )
        .fetch_all(&mut *conn)
        .await
        .map_err(fail)?;
        found.event_columns = rows
            .iter()
            .map(|r| Ok((r.try_get("name")?, r.try_get("type")?)))
            .collect::<std::result::Result<_, sqlx::Error>>()
            .map_err(fail)?;
    }
    found.indexes = sqlx::query_scalar(
        "SELECT DISTINCT CAST(index_name AS CHAR) AS name FROM information_schema.statistics \
         WHERE table_schema = DATABASE()",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(fail)?;
    let schema = schema::check(&found, location)?;
    if !found.is_complete() {
        sqlx::raw_sql(sql!("schema")).execute(&mut *conn).await.map_err(fail)?;
        // MySQL has no CREATE INDEX IF NOT EXISTS.
        for (name, statement) in [
            ("idx_sessions_app_id", "CREATE INDEX idx_sessions_app_id ON sessions (app_name, id)"),
            (
                "idx_agentstate_attributes_expire",
                "CREATE INDEX idx_agentstate_attributes_expire ON agentstate_session_attributes (expire_time)",
            ),
        ] {
            if !found.indexes.iter().any(|i| i == name) {
                sqlx::query(statement).execute(&mut *conn).await.map_err(fail)?;
            }
        }
    }
    Ok(schema)
}

/// The `state` column of the one row `query` selects, if there is one.
async fn read_state<'q>(
    conn: &mut MySqlConnection,
    query: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
) -> Step<Option<Map<String, Value>>> {
    let row = query.fetch_optional(&mut *conn).await.map_err(sql_step("read state"))?;
    let text: Option<String> = row.map(|r| r.try_get("state")).transpose().map_err(sql_step("read state"))?;
    Ok(text.as_deref().map(parse_state).transpose()?)
}

/// A row of shared state: the app's, or a user's in an app.
#[derive(Clone, Copy)]
enum Shared<'a> {
    App(&'a str),
    User(&'a SessionKey),
}

impl Shared<'_> {
    /// Its state; with `lock`, the row is locked until the transaction ends.
    async fn read(self, conn: &mut MySqlConnection, lock: bool) -> Step<Option<Map<String, Value>>> {
        let query = match (self, lock) {
            (Self::App(app), false) => sqlx::query(sql!("app_state_get")).bind(app),
            (Self::App(app), true) => sqlx::query(sql!("app_state_lock")).bind(app),
            (Self::User(key), false) => sqlx::query(sql!("user_state_get")).bind(key.app_name()).bind(key.user_id()),
            (Self::User(key), true) => sqlx::query(sql!("user_state_lock")).bind(key.app_name()).bind(key.user_id()),
        };
        read_state(conn, query).await
    }

    /// Merges `delta` into the row (created if missing), locking it only when it changes it;
    /// returns its state.
    async fn merge(
        self,
        conn: &mut MySqlConnection,
        delta: &Map<String, Value>,
        deleted: &[String],
        now: NaiveDateTime,
    ) -> Step<Map<String, Value>> {
        let (state, write) = merge_row(self.read(conn, !delta.is_empty()).await?, delta, deleted);
        if write {
            let text = state_text(&state);
            let put = match self {
                Self::App(app) => sqlx::query(sql!("app_state_put")).bind(app).bind(text).bind(now),
                Self::User(key) => {
                    sqlx::query(sql!("user_state_put")).bind(key.app_name()).bind(key.user_id()).bind(text).bind(now)
                }
            };
            put.execute(&mut *conn).await.map_err(sql_step("write shared state"))?;
        }
        Ok(state)
    }
}

/// An event row's columns: `id`, `invocation_id`, its time (epoch µs) and `event_data`.
fn columns(row: &MySqlRow) -> Step<(String, String, i64, Option<&str>)> {
    let read = |e| Failure::Sql("read event", e);
    let time: NaiveDateTime = row.try_get("timestamp").map_err(read)?;
    Ok((
        row.try_get("id").map_err(read)?,
        row.try_get("invocation_id").map_err(read)?,
        micros(time),
        row.try_get("event_data").map_err(read)?,
    ))
}

/// An event row → an event.
fn event_of(row: &MySqlRow) -> Step<Event> {
    let (id, invocation, time, data) = columns(row)?;
    Ok(codec::decode_event_text(data, id, invocation, || Ok(time))?)
}

/// An event row as stored.
fn stored_of(row: &MySqlRow) -> Step<StoredEvent> {
    let (id, invocation_id, timestamp_micros, data) = columns(row)?;
    Ok(StoredEvent { id, invocation_id, timestamp_micros, data: data.map(str::to_owned) })
}

/// The session row's state and marker.
fn session_of(row: &MySqlRow) -> Step<(String, i64)> {
    let state: String = row.try_get("state").map_err(sql_step("read session"))?;
    let marker: NaiveDateTime = row.try_get("update_time").map_err(sql_step("read session"))?;
    Ok((state, micros(marker)))
}

/// The handle of a `session_get` or `sessions_list` row.
fn stored_session(row: &MySqlRow, key: SessionKey, merged: Map<String, Value>, events: Vec<Event>) -> Step<Session> {
    let read = |e| Failure::Sql("read session", e);
    let (_, marker) = session_of(row)?;
    let created: NaiveDateTime = row.try_get("create_time").map_err(read)?;
    let expires: Option<NaiveDateTime> = row.try_get("expire_time").map_err(read)?;
    let labels: Option<String> = row.try_get("labels").map_err(read)?;
    let attributes =
        codec::attributes(row.try_get("display_name").map_err(read)?, labels.as_deref(), expires.map(micros))?;
    Ok(Session::from_storage(key, merged, events, marker).created_at(micros(created)).with_attributes(attributes))
}

async fn create_in(conn: &mut MySqlConnection, new: &NewSession) -> Step<Session> {
    let NewSession { key, state, create_time_micros, attributes, history_start } = new;
    let now = naive(*create_time_micros)?;
    let insert = keyed(sql!("session_insert"), key).bind(state_text(&state.session)).bind(now).bind(now);
    match insert.execute(&mut *conn).await {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() }.into());
        }
        Err(e) => return Err(Failure::Sql("insert session", e)),
    }
    if !attributes.is_empty() {
        keyed(sql!("session_attributes_put"), key)
            .bind(now)
            .bind(attributes.display_name.as_deref())
            .bind(codec::labels_text(attributes))
            .bind(attributes.expire_time_micros.map(naive).transpose()?)
            .execute(&mut *conn)
            .await
            .map_err(sql_step("write session attributes"))?;
    }
    if let Some(start) = history_start {
        put_snapshot(conn, key, &HistorySnapshot { at: EventCursor::CREATION, state: start.clone() }).await?;
    }
    // Locks in the commit's order: session, then user, then app.
    let user = Shared::User(key).merge(conn, &state.user, &[], now).await?;
    let app = Shared::App(key.app_name()).merge(conn, &state.app, &[], now).await?;
    let merged = merge_scopes(&state.session, &app, &user);
    Ok(Session::from_storage(key.clone(), merged, Vec::<Event>::new(), *create_time_micros)
        .created_at(*create_time_micros)
        .with_attributes((!attributes.is_empty()).then(|| Arc::new(attributes.clone()))))
}

async fn commit_in(conn: &mut MySqlConnection, commit: &EventCommit) -> Step<CommitOutcome> {
    let EventCommit { key, expected_last_update_micros, event, timestamp_micros, delta, deleted } = commit;
    let row = keyed(sql!("session_lock"), key).fetch_optional(&mut *conn).await.map_err(sql_step("lock session"))?;
    let Some(row) = row else { return Err(Error::NotFound { session_id: key.session_id().to_owned() }.into()) };
    let (session_state, marker) = session_of(&row)?;

    let dup = keyed(sql!("event_get"), key)
        .bind(&event.id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(sql_step("read event"))?;
    if let Some(dup) = dup {
        let existing = event_of(&dup)?;
        return if existing.same_as_retry(event) {
            Ok(CommitOutcome::Duplicate(Box::new(existing)))
        } else {
            Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: event.id.clone() } }.into())
        };
    }
    if marker != *expected_last_update_micros {
        return Err(Error::stale().into());
    }
    let now = naive(*timestamp_micros)?;
    let session_state = codec::merged_text(session_state, &delta.session, &deleted.session)?;
    sqlx::query(sql!("session_update"))
        .bind(session_state)
        .bind(now)
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .execute(&mut *conn)
        .await
        .map_err(sql_step("update session"))?;
    if !delta.user.is_empty() {
        Shared::User(key).merge(conn, &delta.user, &deleted.user, now).await?;
    }
    if !delta.app.is_empty() {
        Shared::App(key.app_name()).merge(conn, &delta.app, &deleted.app, now).await?;
    }
    keyed(sql!("event_insert"), key)
        .bind(&event.id)
        .bind(&event.invocation_id)
        .bind(now)
        .bind(codec::event_data(event)?)
        .execute(&mut *conn)
        .await
        .map_err(sql_step("insert event"))?;
    Ok(CommitOutcome::Committed)
}

/// A read-only transaction over one consistent snapshot.
async fn snapshot(conn: &mut MySqlConnection) -> std::result::Result<sqlx::Transaction<'_, sqlx::MySql>, sqlx::Error> {
    conn.begin_with("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").await
}

/// A final answer of a read: a driver failure becomes a backend error named after the read.
fn finish<T>(what: &str, step: Step<T>) -> Result<T> {
    step.map_err(|failure| match failure {
        Failure::Sql(step, e) => sqlx_error(&format!("{what}: {step}"), e),
        Failure::Done(e) => e,
    })
}

async fn get_in(conn: &mut MySqlConnection, key: &SessionKey, window: EventWindow) -> Step<Option<Session>> {
    let Some((row, merged, events)) = load(conn, key, window, event_of).await? else { return Ok(None) };
    Ok(Some(stored_session(&row, key.clone(), merged, events)?))
}

async fn get_raw_in(conn: &mut MySqlConnection, key: &SessionKey, window: EventWindow) -> Step<Option<RawSession>> {
    let Some((row, merged, events)) = load(conn, key, window, stored_of).await? else { return Ok(None) };
    let session = stored_session(&row, key.clone(), merged, Vec::new())?;
    Ok(Some(RawSession { session, stored_events: Some(events) }))
}

/// A session's row, merged state and window of events (each read by `event`, oldest first), in
/// one snapshot.
async fn load<E>(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    window: EventWindow,
    event: fn(&MySqlRow) -> Step<E>,
) -> Step<Option<(MySqlRow, Map<String, Value>, Vec<E>)>> {
    let mut tx = snapshot(conn).await.map_err(sql_step("begin"))?;
    let row = keyed(sql!("session_get"), key).fetch_optional(&mut *tx).await.map_err(sql_step("read session"))?;
    let Some(row) = row else { return Ok(None) };
    let (state, _) = session_of(&row)?;
    let mut events = Vec::new();
    if window.recent != Some(0) {
        let after = window.after_micros.map(naive).transpose()?;
        let floor = NaiveDateTime::parse_from_str("1000-01-01 00:00:00", "%Y-%m-%d %H:%M:%S").unwrap_or_default();
        let limit = window.recent.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX));
        let rows = keyed(sql!("events_window"), key)
            .bind(after.unwrap_or(floor))
            .bind(limit)
            .fetch_all(&mut *tx)
            .await
            .map_err(sql_step("read events"))?;
        // Read newest first, so the limit keeps the most recent.
        for r in rows.iter().rev() {
            events.push(event(r)?);
        }
    }
    let app = Shared::App(key.app_name()).read(&mut tx, false).await?.unwrap_or_default();
    let user = Shared::User(key).read(&mut tx, false).await?.unwrap_or_default();
    tx.commit().await.map_err(sql_step("end read"))?;
    Ok(Some((row, merge_scopes(&parse_state(&state)?, &app, &user), events)))
}

async fn list_in(conn: &mut MySqlConnection, query: &ListQuery) -> Step<Vec<Session>> {
    let cursor = query.after.as_ref();
    let cursor_time = cursor.map(|c| naive(c.last_update_micros)).transpose()?;
    let limit = query.limit.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX));
    let mut tx = snapshot(conn).await.map_err(sql_step("begin"))?;
    let rows = sqlx::query(sql!("sessions_list"))
        .bind(&query.app_name)
        .bind(query.user_id.as_deref())
        .bind(query.user_id.as_deref())
        .bind(cursor_time)
        .bind(cursor_time)
        .bind(cursor.map_or("", |c| c.user_id.as_str()))
        .bind(cursor.map_or("", |c| c.session_id.as_str()))
        .bind(limit)
        .fetch_all(&mut *tx)
        .await
        .map_err(sql_step("list sessions"))?;
    let app = Shared::App(&query.app_name).read(&mut tx, false).await?.unwrap_or_default();
    tx.commit().await.map_err(sql_step("end read"))?;
    let column =
        |r: &MySqlRow, name: &str| -> Step<Option<String>> { r.try_get(name).map_err(sql_step("read sessions")) };
    rows.iter()
        .map(|r| {
            let (state, _) = session_of(r)?;
            let user = column(r, "user_state")?.as_deref().map(parse_state).transpose()?.unwrap_or_default();
            let user_id = column(r, "user_id")?.unwrap_or_default();
            let id = column(r, "id")?.unwrap_or_default();
            let merged = merge_scopes(&parse_state(&state)?, &app, &user);
            let key = SessionKey::from_storage(query.app_name.as_str(), user_id, id);
            stored_session(r, key, merged, Vec::new())
        })
        .collect()
}

/// Copies `from`'s events up to `upto` into `to` as they are, and sets `to`'s marker: how many.
/// `None`, writing nothing, when some are not after `to_marker`.
async fn copy_in(
    conn: &mut MySqlConnection,
    from: &SessionKey,
    to: &SessionKey,
    upto: &EventCursor,
    to_marker: i64,
) -> Step<Option<u64>> {
    let upto_time = naive(upto.timestamp_micros)?;
    let early: bool = keyed(sql!("events_copy_early"), from)
        .bind(naive(to_marker)?)
        .bind(upto_time)
        .bind(upto_time)
        .bind(&upto.event_id)
        .fetch_one(&mut *conn)
        .await
        .and_then(|row| row.try_get::<bool, _>("early"))
        .map_err(sql_step("read events to copy"))?;
    if early {
        return Ok(None);
    }
    let copied = sqlx::query(sql!("events_copy"))
        .bind(to.session_id())
        .bind(from.app_name())
        .bind(from.user_id())
        .bind(from.session_id())
        .bind(upto_time)
        .bind(upto_time)
        .bind(&upto.event_id)
        .execute(&mut *conn)
        .await
        .map_err(sql_step("copy events"))?
        .rows_affected();
    if copied > 0 {
        sqlx::query(sql!("session_marker_put"))
            .bind(upto_time)
            .bind(to.app_name())
            .bind(to.user_id())
            .bind(to.session_id())
            .execute(&mut *conn)
            .await
            .map_err(sql_step("set the session's marker"))?;
    }
    Ok(Some(copied))
}

async fn put_snapshot(conn: &mut MySqlConnection, key: &SessionKey, snapshot: &HistorySnapshot) -> Step<()> {
    sqlx::query(sql!("history_snapshot_put"))
        .bind(snapshot.at.timestamp_micros)
        .bind(&snapshot.at.event_id)
        .bind(state_text(&snapshot.state))
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .execute(&mut *conn)
        .await
        .map(drop)
        .map_err(sql_step("keep a history snapshot"))
}

async fn events_in(conn: &mut MySqlConnection, query: &EventQuery) -> Step<Option<Vec<Event>>> {
    let EventQuery { key, after, since_micros, limit } = query;
    let cursor_time = after.as_ref().map(|c| naive(c.timestamp_micros)).transpose()?;
    let since = since_micros.map(naive).transpose()?;
    let mut tx = snapshot(conn).await.map_err(sql_step("begin"))?;
    let present =
        keyed(sql!("session_get"), key).fetch_optional(&mut *tx).await.map_err(sql_step("read session"))?.is_some();
    if !present {
        return Ok(None);
    }
    let rows = keyed(sql!("events_page"), key)
        .bind(cursor_time)
        .bind(cursor_time)
        .bind(after.as_ref().map_or("", |c| c.event_id.as_str()))
        .bind(since)
        .bind(since)
        .bind(u64::try_from(*limit).unwrap_or(u64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(sql_step("read events"))?;
    tx.commit().await.map_err(sql_step("end read"))?;
    rows.iter().map(event_of).collect::<Step<_>>().map(Some)
}

#[async_trait]
impl SessionStore for MySqlStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.transaction("creating a session", |conn| {
            let new = new.clone();
            Box::pin(async move { create_in(conn, &new).await })
        })
        .await
    }

    async fn get(&self, key: &SessionKey, window: EventWindow) -> Result<Option<Session>> {
        let mut conn = self.pool.acquire().await.map_err(|e| sqlx_error("loading a session", e))?;
        finish("loading a session", get_in(&mut conn, key, window).await)
    }

    async fn get_raw(&self, key: &SessionKey, window: EventWindow) -> Result<Option<RawSession>> {
        let mut conn = self.pool.acquire().await.map_err(|e| sqlx_error("loading a session", e))?;
        finish("loading a session", get_raw_in(&mut conn, key, window).await)
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let mut conn = self.pool.acquire().await.map_err(|e| sqlx_error("listing sessions", e))?;
        finish("listing sessions", list_in(&mut conn, query).await)
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        keyed(sql!("session_delete"), key)
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| sqlx_error("deleting a session", e))
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let mut conn = self.pool.acquire().await.map_err(|e| sqlx_error("reading events", e))?;
        finish("reading events", events_in(&mut conn, query).await)
    }

    async fn history_snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let row = keyed(sql!("history_snapshot"), key)
            .bind(at_or_before_micros)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading a history snapshot", e))?;
        let Some(row) = row else { return Ok(None) };
        let read = |e| sqlx_error("reading a history snapshot", e);
        let state: String = row.try_get("state").map_err(read)?;
        Ok(Some(HistorySnapshot {
            at: EventCursor {
                timestamp_micros: row.try_get("at_micros").map_err(read)?,
                event_id: row.try_get("at_event_id").map_err(read)?,
            },
            state: parse_state(&state)?,
        }))
    }

    async fn put_history_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        let (key, snapshots) = (key.clone(), snapshots.to_vec());
        self.transaction("keeping history snapshots", |conn| {
            let (key, snapshots) = (key.clone(), snapshots.clone());
            Box::pin(async move {
                for snapshot in &snapshots {
                    put_snapshot(conn, &key, snapshot).await?;
                }
                Ok(())
            })
        })
        .await
    }

    async fn copy_events(
        &self,
        from: &SessionKey,
        to: &SessionKey,
        upto: &EventCursor,
        to_marker: i64,
    ) -> Result<Option<EventCursor>> {
        let (f, t, u) = (from.clone(), to.clone(), upto.clone());
        let copied = self
            .transaction("copying events", move |conn| {
                let (f, t, u) = (f.clone(), t.clone(), u.clone());
                Box::pin(async move { copy_in(conn, &f, &t, &u, to_marker).await })
            })
            .await?;
        match copied {
            None => agentstate::store::replay::copy_events(self, from, to, upto, to_marker).await,
            Some(0) => Ok(None),
            Some(_) => Ok(Some(upto.clone())),
        }
    }

    async fn event(&self, key: &SessionKey, event_id: &str) -> Result<Option<Event>> {
        let row = keyed(sql!("event_get"), key)
            .bind(event_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading an event", e))?;
        finish("reading an event", row.as_ref().map(event_of).transpose())
    }

    async fn first_event_of_invocation(&self, key: &SessionKey, invocation_id: &str) -> Result<Option<Event>> {
        let row = keyed(sql!("invocation_first"), key)
            .bind(invocation_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("reading an invocation", e))?;
        finish("reading an invocation", row.as_ref().map(event_of).transpose())
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
        let done = sqlx::query(sql!("session_expire_put"))
            .bind(expire_micros.map(naive).transpose()?)
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .execute(&self.pool)
            .await
            .map_err(|e| sqlx_error("setting an expire time", e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let cut = naive(cut_micros)?;
        self.transaction("dropping old events", |conn| {
            let (key, boundary) = (key.clone(), boundary.clone());
            Box::pin(async move {
                let mut statements = sql!("events_drop").split(';').map(str::trim).filter(|s| !s.is_empty());
                let (Some(events), Some(snapshots)) = (statements.next(), statements.next()) else {
                    return Ok(0);
                };
                let bound = |sql| sqlx::query(sql).bind(key.app_name()).bind(key.user_id()).bind(key.session_id());
                let dropped = bound(events)
                    .bind(cut)
                    .execute(&mut *conn)
                    .await
                    .map_err(sql_step("drop old events"))?
                    .rows_affected();
                bound(snapshots).bind(cut_micros).execute(&mut *conn).await.map_err(sql_step("drop old snapshots"))?;
                put_snapshot(conn, &key, &boundary).await?;
                Ok(usize::try_from(dropped).unwrap_or_default())
            })
        })
        .await
    }

    async fn event_count(&self, key: &SessionKey) -> Result<Option<usize>> {
        let row = sqlx::query(sql!("event_count"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| sqlx_error("counting events", e))?;
        let n: Option<i64> = row.map(|r| r.try_get("n")).transpose().map_err(|e| sqlx_error("counting events", e))?;
        Ok(n.map(|n| usize::try_from(n).unwrap_or_default()))
    }

    async fn apps(&self) -> Result<Vec<String>> {
        sqlx::query_scalar(sql!("apps")).fetch_all(&self.pool).await.map_err(|e| sqlx_error("listing apps", e))
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        sqlx::query_scalar(sql!("users"))
            .bind(app)
            .bind(app)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| sqlx_error("listing users", e))
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let mut conn = self.pool.acquire().await.map_err(|e| sqlx_error("reading state", e))?;
        finish("reading state", owner_state(&mut conn, owner, false).await).map(Option::unwrap_or_default)
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        self.transaction("rewriting state", |conn| {
            let (owner, swaps) = (owner.clone(), swaps.to_vec());
            Box::pin(async move {
                let Some(mut state) = owner_state(conn, &owner, true).await? else { return Ok(0) };
                let swapped = codec::swap(&mut state, &swaps);
                if swapped > 0 {
                    let text = state_text(&state);
                    let statements: Vec<&str> =
                        sql!("state_rewrite").split(';').map(str::trim).filter(|s| !s.is_empty()).collect();
                    let query = match (&owner, statements.as_slice()) {
                        (StateOwner::App(app), [sql, ..]) => sqlx::query(*sql).bind(text).bind(app.as_str()),
                        (StateOwner::User { app, user }, [_, sql, ..]) => {
                            sqlx::query(*sql).bind(text).bind(app.as_str()).bind(user.as_str())
                        }
                        (StateOwner::Session(key), [_, _, sql, ..]) => {
                            sqlx::query(*sql).bind(text).bind(key.app_name()).bind(key.user_id()).bind(key.session_id())
                        }
                        _ => return Ok(0),
                    };
                    query.execute(&mut *conn).await.map_err(sql_step("rewrite state"))?;
                }
                Ok(swapped)
            })
        })
        .await
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        let done = sqlx::query(sql!("event_rewrite"))
            .bind(codec::event_data(event)?)
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .bind(&event.id)
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
        let (app, user) = (app.to_owned(), user.to_owned());
        self.transaction("erasing a user", |conn| {
            let (app, user) = (app.clone(), user.clone());
            Box::pin(async move {
                let found = user_data_in(conn, &app, &user).await?;
                for statement in sql!("user_erase").split(';').map(str::trim).filter(|s| !s.is_empty()) {
                    sqlx::query(statement)
                        .bind(&app)
                        .bind(&user)
                        .execute(&mut *conn)
                        .await
                        .map_err(sql_step("erase a user"))?;
                }
                Ok(found)
            })
        })
        .await
    }

    async fn user_data(&self, app: &str, user: &str) -> Result<UserData> {
        let mut conn = self.pool.acquire().await.map_err(|e| sqlx_error("counting a user's data", e))?;
        finish("counting a user's data", user_data_in(&mut conn, app, user).await)
    }

    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        let before = naive(before_micros)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.transaction("sweeping expired sessions", |conn| {
            Box::pin(async move {
                let rows = sqlx::query(sql!("sessions_expired"))
                    .bind(before)
                    .bind(limit)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(sql_step("find expired sessions"))?;
                for row in &rows {
                    let part = |name| row.try_get::<String, _>(name).map_err(sql_step("find expired sessions"));
                    let key = SessionKey::from_storage(part("app_name")?, part("user_id")?, part("session_id")?);
                    keyed(sql!("session_delete"), &key)
                        .execute(&mut *conn)
                        .await
                        .map_err(sql_step("delete an expired session"))?;
                }
                Ok(rows.len())
            })
        })
        .await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.transaction("appending an event", |conn| {
            let commit = commit.clone();
            Box::pin(async move { commit_in(conn, &commit).await })
        })
        .await
    }
}

/// What erasing `user` of `app` would remove, read on `conn`.
async fn user_data_in(conn: &mut MySqlConnection, app: &str, user: &str) -> Step<UserData> {
    let row = sqlx::query(sql!("user_data"))
        .bind(app)
        .bind(user)
        .bind(app)
        .bind(user)
        .bind(app)
        .bind(user)
        .fetch_one(&mut *conn)
        .await
        .map_err(sql_step("count a user's data"))?;
    let count = |name| {
        row.try_get::<i64, _>(name)
            .map(|n| usize::try_from(n).unwrap_or_default())
            .map_err(sql_step("count a user's data"))
    };
    Ok(UserData { sessions: count("sessions")?, events: count("events")?, user_state_keys: count("user_keys")? })
}

/// The state `owner` holds, as stored; with `lock`, its row is locked until the transaction ends.
async fn owner_state(conn: &mut MySqlConnection, owner: &StateOwner, lock: bool) -> Step<Option<Map<String, Value>>> {
    let query = match (owner, lock) {
        (StateOwner::App(app), false) => sqlx::query(sql!("app_state_get")).bind(app.as_str()),
        (StateOwner::App(app), true) => sqlx::query(sql!("app_state_lock")).bind(app.as_str()),
        (StateOwner::User { app, user }, false) => {
            sqlx::query(sql!("user_state_get")).bind(app.as_str()).bind(user.as_str())
        }
        (StateOwner::User { app, user }, true) => {
            sqlx::query(sql!("user_state_lock")).bind(app.as_str()).bind(user.as_str())
        }
        (StateOwner::Session(key), _) => {
            sqlx::query(sql!("session_state_lock")).bind(key.app_name()).bind(key.user_id()).bind(key.session_id())
        }
    };
    read_state(conn, query).await
}
