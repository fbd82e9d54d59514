//! MySQL and MariaDB: the reference's v1 schema (LONGTEXT JSON, DATETIME(6)). Neither has
//! data-modifying CTEs, so an append is one transaction that locks the session row, then the user
//! row, then the app row (always in that order) and merges state key by key under those locks.
//! Deadlocks and lock-wait timeouts roll the whole transaction back, so it is retried.

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/mysql/", $name, ".sql"))
    };
}

mod ops;
mod schema;

use agentstate::store::{
    AdminStore, Capabilities, CommitOutcome, EventCommit, EventCopy, EventCursor, EventQuery, HistorySnapshot,
    HistoryStore, LifecycleStore, ListQuery, LoadedSession, NewSession, SessionRead, SessionStore, StateOwner,
    UserDataCounts, ValueSwap, replay,
};
use agentstate::{Event, Map, Result, Session, SessionKey, Value};
use async_trait::async_trait;
use sqlx::Connection;
use sqlx::mysql::{MySqlConnection, MySqlPool};

use ops::{Attempt, Failure, finish};

use crate::pool::{self, PoolOptions, sqlx_error};
use crate::schema::Schema;

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

impl MySqlStore {
    /// Connects and prepares the schema (created if absent; serialised across processes by a
    /// named lock).
    pub async fn connect(options: &PoolOptions) -> Result<Self> {
        let pool = pool::connect(options).await?;
        let schema = schema::prepare(&pool, &options.redacted()).await?;
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

    /// A connection for a read of its own.
    async fn connection(&self, what: &str) -> Result<sqlx::pool::PoolConnection<sqlx::MySql>> {
        self.pool.acquire().await.map_err(|e| sqlx_error(what, e))
    }
}

#[async_trait]
impl SessionStore for MySqlStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.transaction("creating a session", |conn| {
            let new = new.clone();
            Box::pin(async move { ops::create_in(conn, &new).await })
        })
        .await
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        let what = "loading a session";
        finish(what, ops::get_in(&mut *self.connection(what).await?, key, read).await)
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let what = "listing sessions";
        finish(what, ops::list_in(&mut *self.connection(what).await?, query).await)
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        ops::delete(&self.pool, key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.transaction("appending an event", |conn| {
            let commit = commit.clone();
            Box::pin(async move { ops::commit_in(conn, &commit).await })
        })
        .await
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let what = "reading events";
        finish(what, ops::events_in(&mut *self.connection(what).await?, query).await)
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        ops::count_events(&self.pool, key, now_micros).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        ops::users_with_session(&self.pool, app, session_id, now_micros).await
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::none().with_history(self).with_lifecycle(self).with_admin(self)
    }
}

#[async_trait]
impl HistoryStore for MySqlStore {
    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        ops::snapshot(&self.pool, key, at_or_before_micros).await
    }

    async fn put_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        self.transaction("keeping history snapshots", |conn| {
            let (key, snapshots) = (key.clone(), snapshots.to_vec());
            Box::pin(async move {
                for snapshot in &snapshots {
                    ops::put_snapshot(conn, &key, snapshot).await?;
                }
                Ok(())
            })
        })
        .await
    }

    async fn copy_events(&self, copy: &EventCopy) -> Result<Option<EventCursor>> {
        let copied = self
            .transaction("copying events", |conn| {
                let copy = copy.clone();
                Box::pin(async move { ops::copy_in(conn, &copy).await })
            })
            .await?;
        match copied {
            None => replay::copy_events(self, copy).await,
            Some(0) => Ok(None),
            Some(_) => Ok(Some(copy.upto.clone())),
        }
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        self.transaction("dropping old events", |conn| {
            let (key, boundary) = (key.clone(), boundary.clone());
            Box::pin(async move { ops::drop_events_in(conn, &key, cut_micros, &boundary).await })
        })
        .await
    }
}

#[async_trait]
impl LifecycleStore for MySqlStore {
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        self.transaction("sweeping expired sessions", |conn| {
            Box::pin(ops::delete_expired_in(conn, before_micros, limit))
        })
        .await
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>, now_micros: i64) -> Result<bool> {
        ops::set_expire_time(&self.pool, key, expire_micros, now_micros).await
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        self.transaction("erasing a user", |conn| {
            let (app, user) = (app.to_owned(), user.to_owned());
            Box::pin(async move { ops::erase_in(conn, &app, &user).await })
        })
        .await
    }

    async fn count_user_data(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        ops::count_user_data(&self.pool, app, user).await
    }
}

#[async_trait]
impl AdminStore for MySqlStore {
    async fn apps(&self) -> Result<Vec<String>> {
        ops::apps(&self.pool).await
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        ops::users(&self.pool, app).await
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let what = "reading state";
        let state = finish(what, ops::owner_state(&mut *self.connection(what).await?, owner, false).await)?;
        Ok(state.unwrap_or_default())
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        self.transaction("rewriting state", |conn| {
            let (owner, swaps) = (owner.clone(), swaps.to_vec());
            Box::pin(async move { ops::swap_in(conn, &owner, &swaps).await })
        })
        .await
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        ops::rewrite_event(&self.pool, key, event).await
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        ops::metadata(&self.pool, name).await
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        ops::set_metadata(&self.pool, name, value).await
    }
}
