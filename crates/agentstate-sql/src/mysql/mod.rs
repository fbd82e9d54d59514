//! MySQL and MariaDB: the reference's v1 schema (LONGTEXT JSON, DATETIME(6)). Neither has
//! data-modifying CTEs, so an append is one transaction that locks the session row, then the user
//! row, then the app row (always in that order) and merges state key by key under those locks.
//! Deadlocks and lock-wait timeouts roll the whole transaction back, so it is retried.

use agentstate::{
    CommitOutcome, ConflictKind, Error, Event, EventCommit, EventCursor, EventWindow, ListQuery, Map, NewSession,
    Result, Session, SessionKey, SessionStore, Value, merge_scopes,
};
use async_trait::async_trait;
use chrono::NaiveDateTime;
use sqlx::mysql::{MySqlConnection, MySqlPool, MySqlPoolOptions};
use sqlx::{Connection, Row};

use crate::SchemaError;
use crate::codec::{self, merge, micros, naive, parse_state, state_text};
use crate::server::{PoolOptions, is_unique_violation, sqlx_error};

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
        let pool = MySqlPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect(&options.url)
            .await
            .map_err(|e| sqlx_error(&format!("connecting to {}", crate::redact(&options.url)), e))?;
        prepare_schema(&pool, &crate::redact(&options.url)).await?;
        Ok(Self { pool })
    }

    /// The connection pool.
    pub fn pool(&self) -> &MySqlPool {
        &self.pool
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
                Err(Failure::Done(e)) => return Err(e),
                Err(Failure::Sql(_, e)) if is_lock_failure(&e) && attempt < ATTEMPTS => {}
                Err(Failure::Sql(step, e)) => return Err(sqlx_error(&format!("{what}: {step}"), e)),
            }
        }
    }
}

async fn prepare_schema(pool: &MySqlPool, location: &str) -> Result<()> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let mut conn = pool.acquire().await.map_err(fail)?;
    // DDL commits implicitly in MySQL, so a named lock (not a transaction) serialises starters.
    sqlx::query("SELECT GET_LOCK('agentstate_schema', 60)").execute(&mut *conn).await.map_err(fail)?;
    let result = inspect_and_create(&mut conn, location).await;
    sqlx::query("SELECT RELEASE_LOCK('agentstate_schema')").execute(&mut *conn).await.map_err(fail)?;
    result
}

async fn inspect_and_create(conn: &mut MySqlConnection, location: &str) -> Result<()> {
    let fail = |e| sqlx_error("preparing the schema", e);
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables WHERE table_schema = DATABASE()",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(fail)?;
    let has = |t: &str| tables.iter().any(|x| x == t);
    if has("adk_internal_metadata") {
        let version: Option<String> =
            sqlx::query_scalar("SELECT value FROM adk_internal_metadata WHERE `key` = 'schema_version'")
                .fetch_optional(&mut *conn)
                .await
                .map_err(fail)?;
        SchemaError::check_version(version.as_deref(), location)?;
    } else if has("events") {
        let columns: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(column_name AS CHAR) FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = 'events'",
        )
        .fetch_all(&mut *conn)
        .await
        .map_err(fail)?;
        SchemaError::check_event_columns(&columns, location)?;
    }
    sqlx::raw_sql(sql!("schema")).execute(&mut *conn).await.map(drop).map_err(fail)
}

async fn state_row(conn: &mut MySqlConnection, sql: &'static str, binds: &[&str]) -> Step<Option<Map<String, Value>>> {
    let mut query = sqlx::query(sql);
    for b in binds {
        query = query.bind(*b);
    }
    let text: Option<String> = query
        .fetch_optional(&mut *conn)
        .await
        .map_err(sql_step("read state"))?
        .map(|r| r.try_get(0))
        .transpose()
        .map_err(sql_step("read state"))?;
    Ok(text.as_deref().map(parse_state).transpose()?)
}

/// Merges `delta` into the app row (created if missing). Locks the row only when it changes it.
async fn merge_app(
    conn: &mut MySqlConnection,
    app: &str,
    delta: &Map<String, Value>,
    now: NaiveDateTime,
) -> Step<Map<String, Value>> {
    let sql = if delta.is_empty() { sql!("app_state_get") } else { sql!("app_state_lock") };
    let existing = state_row(conn, sql, &[app]).await?;
    let missing = existing.is_none();
    let mut state = existing.unwrap_or_default();
    if missing || !delta.is_empty() {
        merge(&mut state, delta);
        let put = sqlx::query(sql!("app_state_put")).bind(app).bind(state_text(&state)).bind(now);
        put.execute(&mut *conn).await.map_err(sql_step("write app state"))?;
    }
    Ok(state)
}

async fn merge_user(
    conn: &mut MySqlConnection,
    key: &SessionKey,
    delta: &Map<String, Value>,
    now: NaiveDateTime,
) -> Step<Map<String, Value>> {
    let sql = if delta.is_empty() { sql!("user_state_get") } else { sql!("user_state_lock") };
    let existing = state_row(conn, sql, &[key.app_name(), key.user_id()]).await?;
    let missing = existing.is_none();
    let mut state = existing.unwrap_or_default();
    if missing || !delta.is_empty() {
        merge(&mut state, delta);
        let put = sqlx::query(sql!("user_state_put"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(state_text(&state))
            .bind(now);
        put.execute(&mut *conn).await.map_err(sql_step("write user state"))?;
    }
    Ok(state)
}

fn decode(data: Option<&str>, id: String, invocation: String, time: NaiveDateTime) -> Result<Event> {
    codec::decode_event_text(data, id, invocation, micros(time))
}

async fn create_in(conn: &mut MySqlConnection, new: &NewSession) -> Step<Session> {
    let NewSession { key, state, create_time_micros } = new;
    let now = naive(*create_time_micros)?;
    let insert = sqlx::query(sql!("session_insert"))
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .bind(state_text(&state.session))
        .bind(now)
        .bind(now);
    match insert.execute(&mut *conn).await {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => {
            return Err(Error::AlreadyExists { session_id: key.session_id().to_owned() }.into());
        }
        Err(e) => return Err(Failure::Sql("insert session", e)),
    }
    let user = merge_user(conn, key, &state.user, now).await?;
    let app = merge_app(conn, key.app_name(), &state.app, now).await?;
    let merged = merge_scopes(&state.session, &app, &user);
    Ok(Session::from_storage(key.clone(), merged, Vec::<Event>::new(), *create_time_micros))
}

async fn commit_in(conn: &mut MySqlConnection, commit: &EventCommit) -> Step<CommitOutcome> {
    let EventCommit { key, expected_last_update_micros, event, timestamp_micros, delta } = commit;
    let row = sqlx::query(sql!("session_lock"))
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .fetch_optional(&mut *conn)
        .await
        .map_err(sql_step("lock session"))?;
    let Some(row) = row else { return Err(Error::NotFound { session_id: key.session_id().to_owned() }.into()) };
    let session_state: String = row.try_get(0).map_err(sql_step("read session"))?;
    let marker: NaiveDateTime = row.try_get(1).map_err(sql_step("read session"))?;

    let dup = sqlx::query(sql!("event_get"))
        .bind(&event.id)
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .fetch_optional(&mut *conn)
        .await
        .map_err(sql_step("read event"))?;
    if let Some(dup) = dup {
        let invocation: String = dup.try_get(0).map_err(sql_step("read event"))?;
        let time: NaiveDateTime = dup.try_get(1).map_err(sql_step("read event"))?;
        let data: Option<String> = dup.try_get(2).map_err(sql_step("read event"))?;
        let existing = decode(data.as_deref(), event.id.clone(), invocation, time)?;
        return if existing.same_as_retry(event) {
            Ok(CommitOutcome::Duplicate(Box::new(existing)))
        } else {
            Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { event_id: event.id.clone() } }.into())
        };
    }
    if micros(marker) != *expected_last_update_micros {
        return Err(Error::stale().into());
    }
    let now = naive(*timestamp_micros)?;
    let session_state = codec::merged_text(session_state, &delta.session)?;
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
        merge_user(conn, key, &delta.user, now).await?;
    }
    if !delta.app.is_empty() {
        merge_app(conn, key.app_name(), &delta.app, now).await?;
    }
    sqlx::query(sql!("event_insert"))
        .bind(&event.id)
        .bind(key.app_name())
        .bind(key.user_id())
        .bind(key.session_id())
        .bind(&event.invocation_id)
        .bind(now)
        .bind(codec::event_data(event)?)
        .execute(&mut *conn)
        .await
        .map_err(sql_step("insert event"))?;
    Ok(CommitOutcome::Committed)
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
        let fail = |e| sqlx_error("loading a session", e);
        let mut conn = self.pool.acquire().await.map_err(fail)?;
        let mut tx = conn.begin_with("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").await.map_err(fail)?;
        let row = sqlx::query(sql!("session_get"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .fetch_optional(&mut *tx)
            .await
            .map_err(fail)?;
        let Some(row) = row else { return Ok(None) };
        let state: String = row.try_get(0).map_err(fail)?;
        let marker: NaiveDateTime = row.try_get(1).map_err(fail)?;
        let mut events = Vec::new();
        if window.recent != Some(0) {
            let after = window.after_micros.map(naive).transpose()?;
            let floor = NaiveDateTime::parse_from_str("1000-01-01 00:00:00", "%Y-%m-%d %H:%M:%S").unwrap_or_default();
            let limit = window.recent.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX));
            let rows = sqlx::query(sql!("events_window"))
                .bind(key.app_name())
                .bind(key.user_id())
                .bind(key.session_id())
                .bind(after.unwrap_or(floor))
                .bind(limit)
                .fetch_all(&mut *tx)
                .await
                .map_err(fail)?;
            for r in rows.into_iter().rev() {
                let (id, invocation, time, data) = (
                    r.try_get(0).map_err(fail)?,
                    r.try_get(1).map_err(fail)?,
                    r.try_get(2).map_err(fail)?,
                    r.try_get(3).map_err(fail)?,
                );
                events.push(decode(data, id, invocation, time)?);
            }
        }
        let state_of = |r: Option<sqlx::mysql::MySqlRow>| -> Result<Map<String, Value>> {
            match r {
                Some(r) => parse_state(&r.try_get::<String, _>(0).map_err(fail)?),
                None => Ok(Map::new()),
            }
        };
        let app =
            sqlx::query(sql!("app_state_get")).bind(key.app_name()).fetch_optional(&mut *tx).await.map_err(fail)?;
        let user = sqlx::query(sql!("user_state_get"))
            .bind(key.app_name())
            .bind(key.user_id())
            .fetch_optional(&mut *tx)
            .await
            .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        let merged = merge_scopes(&parse_state(&state)?, &state_of(app)?, &state_of(user)?);
        Ok(Some(Session::from_storage(key.clone(), merged, events, micros(marker))))
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let fail = |e| sqlx_error("listing sessions", e);
        let cursor = query.after.as_ref();
        let cursor_time = cursor.map(|c| naive(c.last_update_micros)).transpose()?;
        let limit = query.limit.map_or(u64::MAX, |n| u64::try_from(n).unwrap_or(u64::MAX));
        let mut conn = self.pool.acquire().await.map_err(fail)?;
        let mut tx = conn.begin_with("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").await.map_err(fail)?;
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
            .map_err(fail)?;
        let app_row =
            sqlx::query(sql!("app_state_get")).bind(&query.app_name).fetch_optional(&mut *tx).await.map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        let app = match app_row {
            Some(r) => parse_state(&r.try_get::<String, _>(0).map_err(fail)?)?,
            None => Map::new(),
        };
        rows.iter()
            .map(|r| {
                let user_id: String = r.try_get(0).map_err(fail)?;
                let id: String = r.try_get(1).map_err(fail)?;
                let state: String = r.try_get(2).map_err(fail)?;
                let marker: NaiveDateTime = r.try_get(3).map_err(fail)?;
                let user: Option<String> = r.try_get(4).map_err(fail)?;
                let user = user.as_deref().map(parse_state).transpose()?.unwrap_or_default();
                let merged = merge_scopes(&parse_state(&state)?, &app, &user);
                let key = SessionKey::from_storage(query.app_name.as_str(), user_id, id);
                Ok(Session::from_storage(key, merged, Vec::<Event>::new(), micros(marker)))
            })
            .collect()
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        sqlx::query(sql!("session_delete"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(|e| sqlx_error("deleting a session", e))
    }

    async fn events_after(
        &self,
        key: &SessionKey,
        after: Option<&EventCursor>,
        limit: usize,
    ) -> Result<Option<Vec<Event>>> {
        let fail = |e| sqlx_error("reading events", e);
        let cursor_time = after.map(|c| naive(c.timestamp_micros)).transpose()?;
        let mut conn = self.pool.acquire().await.map_err(fail)?;
        let mut tx = conn.begin_with("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").await.map_err(fail)?;
        let present = sqlx::query(sql!("session_get"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .fetch_optional(&mut *tx)
            .await
            .map_err(fail)?
            .is_some();
        if !present {
            return Ok(None);
        }
        let rows = sqlx::query(sql!("events_page"))
            .bind(key.app_name())
            .bind(key.user_id())
            .bind(key.session_id())
            .bind(cursor_time)
            .bind(cursor_time)
            .bind(after.map_or("", |c| c.event_id.as_str()))
            .bind(u64::try_from(limit).unwrap_or(u64::MAX))
            .fetch_all(&mut *tx)
            .await
            .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        rows.iter()
            .map(|r| {
                let data: Option<&str> = r.try_get(3).map_err(fail)?;
                decode(data, r.try_get(0).map_err(fail)?, r.try_get(1).map_err(fail)?, r.try_get(2).map_err(fail)?)
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.transaction("appending an event", |conn| {
            let commit = commit.clone();
            Box::pin(async move { commit_in(conn, &commit).await })
        })
        .await
    }
}
