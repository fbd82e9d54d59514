//! PostgreSQL: the reference's v1 schema (JSONB state, naive-UTC timestamps); every operation is
//! one statement, so one round trip and one atomic transaction. Many agentstate processes can
//! share one database: the stale check and the merges happen in the database.

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/postgres/", $name, ".sql"))
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
use sqlx::postgres::PgPool;

use crate::pool::{self, PoolOptions};
use crate::schema::Schema;

/// The PostgreSQL session store.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    schema: Schema,
}

impl PostgresStore {
    /// Connects and prepares the schema (created if absent; serialised across processes by an
    /// advisory lock).
    pub async fn connect(options: &PoolOptions) -> Result<Self> {
        let pool = pool::connect(options).await?;
        let schema = schema::prepare(&pool, &options.redacted()).await?;
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

#[async_trait]
impl SessionStore for PostgresStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        ops::create(&self.pool, new).await
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        ops::get_session(&self.pool, key, read).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        ops::list(&self.pool, query).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        ops::delete(&self.pool, key).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        ops::commit(&self.pool, commit).await
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        ops::events(&self.pool, query).await
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
impl HistoryStore for PostgresStore {
    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        ops::snapshot(&self.pool, key, at_or_before_micros).await
    }

    async fn put_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        ops::put_snapshots(&self.pool, key, snapshots).await
    }

    async fn copy_events(&self, copy: &EventCopy) -> Result<Option<EventCursor>> {
        match ops::copy_events(&self.pool, copy).await? {
            Some(copied) => Ok(copied),
            None => replay::copy_events(self, copy).await,
        }
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        ops::drop_events_before(&self.pool, key, cut_micros, boundary).await
    }
}

#[async_trait]
impl LifecycleStore for PostgresStore {
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<usize> {
        ops::delete_expired(&self.pool, before_micros, limit).await
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>, now_micros: i64) -> Result<bool> {
        ops::set_expire_time(&self.pool, key, expire_micros, now_micros).await
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        ops::erase_user(&self.pool, app, user).await
    }

    async fn count_user_data(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        ops::count_user_data(&self.pool, app, user).await
    }
}

#[async_trait]
impl AdminStore for PostgresStore {
    async fn apps(&self) -> Result<Vec<String>> {
        ops::apps(&self.pool).await
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        ops::users(&self.pool, app).await
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        ops::stored_state(&self.pool, owner).await
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        ops::swap_values(&self.pool, owner, swaps).await
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
