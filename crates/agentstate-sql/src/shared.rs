//! The operations the PostgreSQL and MySQL stores run the same way: each is one statement whose
//! file has the same name and takes the same parameters in the same order in both dialects
//! (`sql/postgres/`, `sql/mysql/`), read and answered by the same code. Written once, as a macro
//! each dialect's `ops` module expands next to its own `sql!` (which names the dialect's file)
//! and pool type.
//!
//! Times the statements compare expire times with are `Option<NaiveDateTime>`: `None` (expiry not
//! judged) for `i64::MIN`, see [`expiry_time`].

use chrono::NaiveDateTime;

use crate::codec::naive;

/// The time `now_micros` as the statements compare expire times with it; `None` for `i64::MIN`
/// (expiry not judged).
pub(crate) fn expiry_time(now_micros: i64) -> agentstate::Result<Option<NaiveDateTime>> {
    (now_micros != i64::MIN).then(|| naive(now_micros)).transpose()
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
                keyed(sql!("session_delete"), key)
                    .execute(pool)
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
                let done = keyed(sql!("session_expire_put"), key)
                    .bind(expire_micros.map(naive).transpose()?)
                    .bind(expiry_time(now_micros)?)
                    .execute(pool)
                    .await
                    .map_err(|e| sqlx_error("setting an expire time", e))?;
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
                let count =
                    |name| row.try_get::<i64, _>(name).map(|n| usize::try_from(n).unwrap_or_default()).map_err(read);
                Ok(UserDataCounts {
                    sessions: count("sessions")?,
                    events: count("events")?,
                    user_state_keys: count("user_keys")?,
                })
            }
        }
    };
}

pub(crate) use operations;
