//! The operations the PostgreSQL and MySQL stores run the same way: each is one statement whose
//! file has the same name and takes the same parameters in the same order in both dialects
//! (`sql/postgres/`, `sql/mysql/`), read and answered by the same code. Written once, as a macro
//! each dialect's `ops` module expands next to its own `sql!` (which names the dialect's file)
//! and pool type.
//!
//! Times the statements compare expire times with are `Option<NaiveDateTime>`: `None` (expiry not
//! judged) for `i64::MIN`, see [`expiry_time`].

use agentstate::store::SharedStateWrites;
use chrono::NaiveDateTime;

use crate::codec::naive;

/// The time `now_micros` as the statements compare expire times with it; `None` for `i64::MIN`
/// (expiry not judged).
pub(crate) fn expiry_time(now_micros: i64) -> agentstate::Result<Option<NaiveDateTime>> {
    (now_micros != i64::MIN).then(|| naive(now_micros)).transpose()
}

/// The position a page of logged writes starts before: the end of the log without one.
pub(crate) fn writes_before(query: &SharedStateWrites) -> (i64, &str) {
    query.before.as_ref().map_or((i64::MAX, ""), |(at, id)| (*at, id.as_str()))
}

/// Expands to a module `common` with the shared operations, as functions of a `Pool` of `$db`.
macro_rules! operations {
    ($db:ty) => {
        /// The operations PostgreSQL and MySQL share ([`crate::shared`]).
        pub(crate) mod common {
            use agentstate::store::{EventCursor, HistorySnapshot, UserDataCounts};
            use agentstate::{Event, Result, SessionKey};
            use sqlx::Row as _;

            use $crate::codec::{self, naive, parse_state};
            use $crate::pool::{keyed, sqlx_error};
            use $crate::shared::expiry_time;

            /// The dialect's pool.
            pub(crate) type Pool = sqlx::Pool<$db>;

            /// Deletes a session; its events, attributes and snapshots go by cascade.
            pub(crate) async fn delete(pool: &Pool, key: &SessionKey) -> Result<()> {
                $crate::pool::retry_on_lock(|| keyed(sql!("session_delete"), key).execute(pool))
                    .await
                    .map(drop)
                    .map_err(|e| sqlx_error("deleting a session", e))
            }

            /// The users of `app` with a live session `session_id`.
            pub(crate) async fn users_with_session(
                pool: &Pool,
                app: &str,
                session_id: &str,
                now_micros: i64,
            ) -> Result<Vec<String>> {
                sqlx::query_scalar(sql!("session_users"))
                    .bind(app)
                    .bind(session_id)
                    .bind(expiry_time(now_micros)?)
                    .fetch_all(pool)
                    .await
                    .map_err(|e| sqlx_error("finding sessions", e))
            }

            /// A live session's event count.
            pub(crate) async fn count_events(pool: &Pool, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
                let row = keyed(sql!("event_count"), key)
                    .bind(expiry_time(now_micros)?)
                    .fetch_optional(pool)
                    .await
                    .map_err(|e| sqlx_error("counting events", e))?;
                let n: Option<i64> =
                    row.map(|r| r.try_get("n")).transpose().map_err(|e| sqlx_error("counting events", e))?;
                Ok(n.map(|n| usize::try_from(n).unwrap_or_default()))
            }

            /// How many sessions a list covers, every page.
            pub(crate) async fn count_sessions(pool: &Pool, query: &agentstate::store::ListQuery) -> Result<usize> {
                let n: i64 = sqlx::query_scalar(sql!("sessions_count"))
                    .bind(&query.app_name)
                    .bind(query.user_id.as_deref())
                    .bind(expiry_time(query.now_micros)?)
                    .fetch_one(pool)
                    .await
                    .map_err(|e| sqlx_error("counting sessions", e))?;
                Ok(usize::try_from(n).unwrap_or_default())
            }

            /// Every app with sessions or state.
            pub(crate) async fn apps(pool: &Pool) -> Result<Vec<String>> {
                sqlx::query_scalar(sql!("apps")).fetch_all(pool).await.map_err(|e| sqlx_error("listing apps", e))
            }

            /// Every user of `app` with sessions or state.
            pub(crate) async fn users(pool: &Pool, app: &str) -> Result<Vec<String>> {
                sqlx::query_scalar(sql!("users"))
                    .bind(app)
                    .fetch_all(pool)
                    .await
                    .map_err(|e| sqlx_error("listing users", e))
            }

            /// The newest history snapshot at or before `at_or_before_micros`.
            pub(crate) async fn snapshot(
                pool: &Pool,
                key: &SessionKey,
                at_or_before_micros: i64,
            ) -> Result<Option<HistorySnapshot>> {
                let read = |e| sqlx_error("reading a history snapshot", e);
                let row = keyed(sql!("history_snapshot"), key)
                    .bind(at_or_before_micros)
                    .fetch_optional(pool)
                    .await
                    .map_err(read)?;
                let Some(row) = row else { return Ok(None) };
                let state: String = row.try_get("state").map_err(read)?;
                Ok(Some(HistorySnapshot {
                    at: EventCursor {
                        timestamp_micros: row.try_get("at_micros").map_err(read)?,
                        event_id: row.try_get("at_event_id").map_err(read)?,
                    },
                    state: parse_state(&state)?,
                }))
            }

            /// Sets a live session's expire time; whether there was one.
            pub(crate) async fn set_expire_time(
                pool: &Pool,
                key: &SessionKey,
                expire_micros: Option<i64>,
                now_micros: i64,
            ) -> Result<bool> {
                let update = agentstate::store::AttributesUpdate {
                    expire_time_micros: Some(expire_micros),
                    ..agentstate::store::AttributesUpdate::default()
                };
                set_attributes(pool, key, &update, now_micros).await
            }

            /// Sets what `update` says of a live session's attributes, keeping the rest, in one
            /// statement; whether there was one.
            pub(crate) async fn set_attributes(
                pool: &Pool,
                key: &SessionKey,
                update: &agentstate::store::AttributesUpdate,
                now_micros: i64,
            ) -> Result<bool> {
                let expire = update.expire_time_micros;
                let (expire_at, judged_at) = (expire.flatten().map(naive).transpose()?, expiry_time(now_micros)?);
                let done = $crate::pool::retry_on_lock(|| {
                    keyed(sql!("session_attributes_set"), key)
                        .bind(update.display_name.clone().flatten())
                        .bind(update.display_name.is_some())
                        .bind(update.labels_json())
                        .bind(update.labels.is_some())
                        .bind(expire_at)
                        .bind(expire.is_some())
                        .bind(judged_at)
                        .execute(pool)
                })
                .await
                .map_err(|e| sqlx_error("setting a session's attributes", e))?;
                Ok(done.rows_affected() > 0)
            }

            /// Rewrites a stored event's data.
            pub(crate) async fn rewrite_event(pool: &Pool, key: &SessionKey, event: &Event) -> Result<bool> {
                let done = keyed(sql!("event_rewrite"), key)
                    .bind(&event.id)
                    .bind(codec::event_data(event)?)
                    .execute(pool)
                    .await
                    .map_err(|e| sqlx_error("rewriting an event", e))?;
                Ok(done.rows_affected() > 0)
            }

            /// An entry of `adk_internal_metadata`.
            pub(crate) async fn metadata(pool: &Pool, name: &str) -> Result<Option<String>> {
                sqlx::query_scalar(sql!("metadata_get"))
                    .bind(name)
                    .fetch_optional(pool)
                    .await
                    .map_err(|e| sqlx_error("reading metadata", e))
            }

            /// Sets an entry of `adk_internal_metadata`.
            pub(crate) async fn set_metadata(pool: &Pool, name: &str, value: &str) -> Result<()> {
                sqlx::query(sql!("metadata_put"))
                    .bind(name)
                    .bind(value)
                    .execute(pool)
                    .await
                    .map(drop)
                    .map_err(|e| sqlx_error("writing metadata", e))
            }

            /// What erasing `user` of `app` would remove, read with `executor`.
            pub(crate) async fn count_user_data<'c, E>(executor: E, app: &str, user: &str) -> Result<UserDataCounts>
            where
                E: sqlx::Executor<'c, Database = $db>,
            {
                let read = |e| sqlx_error("counting a user's data", e);
                let row =
                    sqlx::query(sql!("user_data")).bind(app).bind(user).fetch_one(executor).await.map_err(read)?;
                crate::codec::user_data_counts(|name| row.try_get::<i64, _>(name)).map_err(read)
            }

            /// A page of an owner's log of state writes without a session, newest first.
            pub(crate) async fn shared_state_writes(
                pool: &Pool,
                query: &agentstate::store::SharedStateWrites,
            ) -> Result<Vec<agentstate::store::SharedStateWrite>> {
                let read = |e| sqlx_error("reading logged state writes", e);
                let (app, user) = $crate::state_log::log_owner(&query.owner)?;
                let (at, id) = $crate::shared::writes_before(query);
                let rows = sqlx::query(sql!("state_writes"))
                    .bind(app)
                    .bind(user)
                    .bind(at)
                    .bind(id)
                    .bind(i64::try_from(query.limit).unwrap_or(i64::MAX))
                    .fetch_all(pool)
                    .await
                    .map_err(read)?;
                rows.iter()
                    .map(|row| {
                        let set: String = row.try_get("set_keys").map_err(read)?;
                        let deleted: String = row.try_get("deleted_keys").map_err(read)?;
                        $crate::state_log::state_write(
                            row.try_get("at_micros").map_err(read)?,
                            row.try_get("write_id").map_err(read)?,
                            row.try_get("origin").map_err(read)?,
                            &set,
                            &deleted,
                        )
                    })
                    .collect()
            }

            /// What the database holds of the schema, read with the dialect's catalogue queries.
            pub(crate) async fn find_schema(
                conn: &mut <$db as sqlx::Database>::Connection,
                catalogue: &$crate::schema::Catalogue,
            ) -> std::result::Result<$crate::schema::Found, sqlx::Error> {
                let tables = sqlx::query_scalar(catalogue.tables).fetch_all(&mut *conn).await?;
                let mut found = $crate::schema::Found { tables, ..Default::default() };
                if found.has_table("adk_internal_metadata") {
                    found.version = sqlx::query_scalar(catalogue.version).fetch_optional(&mut *conn).await?;
                }
                if found.has_table("events") {
                    let rows = sqlx::query(catalogue.event_columns).fetch_all(&mut *conn).await?;
                    found.event_columns = rows
                        .iter()
                        .map(|r| Ok((r.try_get("name")?, r.try_get("type")?)))
                        .collect::<std::result::Result<_, sqlx::Error>>()?;
                }
                found.indexes = sqlx::query_scalar(catalogue.indexes).fetch_all(&mut *conn).await?;
                Ok(found)
            }
        }
    };
}

pub(crate) use operations;

/// A store over a pool of the dialect's connections: its struct, constructor, accessors and
/// store traits, each trait method the dialect's `ops` function of the same name: PostgreSQL's
/// and MySQL's have the same signatures.
macro_rules! pool_store {
    ($(#[$doc:meta])* pub struct $store:ident;) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $store {
            pool: ops::Pool,
            schema: $crate::schema::Schema,
            /// Ends the pool's background work (if any) with the last clone of the store.
            _work: Option<std::sync::Arc<$crate::pool::StopOnDrop>>,
        }

        impl $store {
            /// Connects and prepares the schema (created if absent; concurrent starters wait for
            /// each other on a database lock).
            pub async fn connect(options: &$crate::pool::PoolOptions) -> agentstate::Result<Self> {
                let (pool, work) = connect(options).await?;
                let schema = schema::prepare(&pool, &options.redacted()).await?;
                Ok(Self { pool, schema, _work: work.map(std::sync::Arc::new) })
            }

            /// The connection pool (for a PostgreSQL host list, kept on the host that fits only
            /// while the store lives).
            pub fn pool(&self) -> &ops::Pool {
                &self.pool
            }

            /// The schema the database was found with, or created with.
            pub fn schema(&self) -> &$crate::schema::Schema {
                &self.schema
            }
        }

        #[async_trait::async_trait]
        impl agentstate::store::SessionStore for $store {
            async fn create(&self, new: agentstate::store::NewSession) -> agentstate::Result<agentstate::Session> {
                ops::create(&self.pool, new).await
            }

            async fn get(
                &self,
                key: &agentstate::SessionKey,
                read: &agentstate::store::SessionRead,
            ) -> agentstate::Result<Option<agentstate::store::LoadedSession>> {
                ops::get_session(&self.pool, key, read).await
            }

            async fn list(&self, query: &agentstate::store::ListQuery) -> agentstate::Result<Vec<agentstate::Session>> {
                ops::list(&self.pool, query).await
            }

            async fn count_sessions(&self, query: &agentstate::store::ListQuery) -> agentstate::Result<usize> {
                ops::count_sessions(&self.pool, query).await
            }

            async fn delete(&self, key: &agentstate::SessionKey) -> agentstate::Result<()> {
                ops::delete(&self.pool, key).await
            }

            async fn commit(
                &self,
                commit: agentstate::store::EventCommit,
            ) -> agentstate::Result<agentstate::store::CommitOutcome> {
                ops::commit(&self.pool, commit).await
            }

            async fn events(
                &self,
                query: &agentstate::store::EventQuery,
            ) -> agentstate::Result<Option<Vec<agentstate::Event>>> {
                ops::events(&self.pool, query).await
            }

            async fn count_events(
                &self,
                key: &agentstate::SessionKey,
                now_micros: i64,
            ) -> agentstate::Result<Option<usize>> {
                ops::count_events(&self.pool, key, now_micros).await
            }

            async fn users_with_session(
                &self,
                app: &str,
                session_id: &str,
                now_micros: i64,
            ) -> agentstate::Result<Vec<String>> {
                ops::users_with_session(&self.pool, app, session_id, now_micros).await
            }

            fn system(&self) -> &'static str {

                ops::SYSTEM

            }


            fn capabilities(&self) -> agentstate::store::Capabilities<'_> {
                agentstate::store::Capabilities::every(self)
            }
        }

        $crate::artifacts::artifact_store!($store);

        #[async_trait::async_trait]
        impl agentstate::store::MemoryStore for $store {
            async fn put_memories(&self, put: &agentstate::store::MemoryPut) -> agentstate::Result<usize> {
                ops::memory::put(&self.pool, put).await
            }

            async fn search_memories(
                &self,
                search: &agentstate::store::MemorySearch,
            ) -> agentstate::Result<Vec<agentstate::memory::Memory>> {
                ops::memory::search(&self.pool, search).await
            }

            async fn list_memories(
                &self,
                list: &agentstate::store::MemoryList,
            ) -> agentstate::Result<Vec<agentstate::memory::Memory>> {
                ops::memory::list(&self.pool, list).await
            }

            async fn find_memories(
                &self,
                app: &str,
                id: &str,
                now_micros: i64,
                limit: usize,
            ) -> agentstate::Result<Vec<(agentstate::memory::MemoryOwner, agentstate::memory::Memory)>> {
                ops::memory::find(&self.pool, app, id, now_micros, limit).await
            }

            async fn delete_memory(&self, owner: &agentstate::memory::MemoryOwner, id: &str) -> agentstate::Result<usize> {
                ops::memory::delete(&self.pool, owner, id).await
            }

            async fn erase_memories(&self, owner: &agentstate::memory::MemoryOwner) -> agentstate::Result<usize> {
                ops::memory::erase(&self.pool, owner).await
            }

            async fn delete_expired_memories(&self, before_micros: i64, limit: usize) -> agentstate::Result<usize> {
                ops::memory::delete_expired(&self.pool, before_micros, limit).await
            }

            async fn count_memories(
                &self,
                owner: &agentstate::memory::MemoryOwner,
                now_micros: i64,
            ) -> agentstate::Result<usize> {
                ops::memory::count_live(&self.pool, owner, now_micros).await
            }

            async fn memory_owners(
                &self,
                after: Option<&agentstate::memory::MemoryOwner>,
                limit: usize,
            ) -> agentstate::Result<Vec<agentstate::memory::MemoryOwner>> {
                ops::memory::owners(&self.pool, after, limit).await
            }
        }

        #[async_trait::async_trait]
        impl agentstate::store::LeaseStore for $store {
            async fn acquire_lease(
                &self,
                request: &agentstate::store::LeaseRequest,
            ) -> agentstate::Result<agentstate::store::LeaseState> {
                ops::leases::acquire(&self.pool, request).await
            }

            async fn release_lease(&self, key: &agentstate::SessionKey, holder: &str) -> agentstate::Result<bool> {
                ops::leases::release(&self.pool, key, holder).await
            }

            async fn interrupt_lease(&self, key: &agentstate::SessionKey, now_micros: i64) -> agentstate::Result<bool> {
                ops::leases::interrupt(&self.pool, key, now_micros).await
            }
        }

        #[async_trait::async_trait]
        impl agentstate::store::SharedStateStore for $store {
            async fn shared_state(
                &self,
                owner: &agentstate::store::StateOwner,
            ) -> agentstate::Result<agentstate::Map<String, agentstate::Value>> {
                agentstate::store::shared_state_as_stored(self, owner).await
            }

            async fn update_shared_state(
                &self,
                update: &agentstate::store::SharedStateUpdate,
            ) -> agentstate::Result<()> {
                ops::update_shared_state(&self.pool, update).await
            }

            async fn shared_state_writes(
                &self,
                query: &agentstate::store::SharedStateWrites,
            ) -> agentstate::Result<Vec<agentstate::store::SharedStateWrite>> {
                ops::shared_state_writes(&self.pool, query).await
            }
        }

        #[async_trait::async_trait]
        impl agentstate::store::HistoryStore for $store {
            async fn snapshot(
                &self,
                key: &agentstate::SessionKey,
                at_or_before_micros: i64,
            ) -> agentstate::Result<Option<agentstate::store::HistorySnapshot>> {
                ops::snapshot(&self.pool, key, at_or_before_micros).await
            }

            async fn put_snapshots(
                &self,
                key: &agentstate::SessionKey,
                snapshots: &[agentstate::store::HistorySnapshot],
            ) -> agentstate::Result<()> {
                ops::put_snapshots(&self.pool, key, snapshots).await
            }

            /// In SQL where the events can be copied as they are; else a replay.
            async fn copy_events(
                &self,
                copy: &agentstate::store::EventCopy,
            ) -> agentstate::Result<Option<agentstate::store::EventCursor>> {
                match ops::copy_events(&self.pool, copy).await? {
                    Some(copied) => Ok(copied),
                    None => agentstate::store::replay::copy_events(self, copy).await,
                }
            }

            async fn drop_events_before(
                &self,
                key: &agentstate::SessionKey,
                cut_micros: i64,
                boundary: &agentstate::store::HistorySnapshot,
            ) -> agentstate::Result<usize> {
                ops::drop_events_before(&self.pool, key, cut_micros, boundary).await
            }
        }

        #[async_trait::async_trait]
        impl agentstate::store::LifecycleStore for $store {
            async fn delete_expired(
                &self,
                before_micros: i64,
                limit: usize,
            ) -> agentstate::Result<Vec<agentstate::SessionKey>> {
                ops::delete_expired(&self.pool, before_micros, limit).await
            }

            async fn set_expire_time(
                &self,
                key: &agentstate::SessionKey,
                expire_micros: Option<i64>,
                now_micros: i64,
            ) -> agentstate::Result<bool> {
                ops::set_expire_time(&self.pool, key, expire_micros, now_micros).await
            }

            async fn set_attributes(
                &self,
                key: &agentstate::SessionKey,
                update: &agentstate::store::AttributesUpdate,
                now_micros: i64,
            ) -> agentstate::Result<bool> {
                ops::set_attributes(&self.pool, key, update, now_micros).await
            }

            async fn erase_user(&self, app: &str, user: &str) -> agentstate::Result<agentstate::UserDataCounts> {
                ops::erase_user(&self.pool, app, user).await
            }

            async fn count_user_data(&self, app: &str, user: &str) -> agentstate::Result<agentstate::UserDataCounts> {
                ops::count_user_data(&self.pool, app, user).await
            }
        }

        #[async_trait::async_trait]
        impl agentstate::store::AdminStore for $store {
            async fn apps(&self) -> agentstate::Result<Vec<String>> {
                ops::apps(&self.pool).await
            }

            async fn users(&self, app: &str) -> agentstate::Result<Vec<String>> {
                ops::users(&self.pool, app).await
            }

            async fn stored_state(
                &self,
                owner: &agentstate::store::StateOwner,
            ) -> agentstate::Result<agentstate::Map<String, agentstate::Value>> {
                ops::stored_state(&self.pool, owner).await
            }

            async fn swap_values(
                &self,
                owner: &agentstate::store::StateOwner,
                swaps: &[agentstate::store::ValueSwap],
            ) -> agentstate::Result<usize> {
                ops::swap_values(&self.pool, owner, swaps).await
            }

            async fn rewrite_event(
                &self,
                key: &agentstate::SessionKey,
                event: &agentstate::Event,
            ) -> agentstate::Result<bool> {
                ops::rewrite_event(&self.pool, key, event).await
            }

            async fn metadata(&self, name: &str) -> agentstate::Result<Option<String>> {
                ops::metadata(&self.pool, name).await
            }

            async fn set_metadata(&self, name: &str, value: &str) -> agentstate::Result<()> {
                ops::set_metadata(&self.pool, name, value).await
            }
        }
    };
}
pub(crate) use pool_store;
