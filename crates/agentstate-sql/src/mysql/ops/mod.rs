//! The MySQL statements of each operation. Neither MySQL nor MariaDB has data-modifying CTEs, so
//! a write is one transaction of several statements, locking the session row, then the user row,
//! then the app row (always in that order). Those operations it shares with PostgreSQL are
//! [`crate::shared`]'s.

mod commit;
mod load;
mod pooled;
mod search;

use std::future::Future;
use std::pin::Pin;

use agentstate::store::{StateOwner, StoredEvent, ValueSwap};
use agentstate::{Error, Event, Map, Result, Session, SessionKey, Value};
use chrono::NaiveDateTime;
use sqlx::mysql::{MySqlConnection, MySqlRow};
use sqlx::{Connection as _, Row as _};

use commit::{commit_in, copy_in, create_in, delete_expired_in, drop_events_in, erase_in, put_snapshot};
pub(super) use common::*;
use load::{events_in, get_in, list_in};
pub(super) use pooled::*;
use search::memory_search;

use crate::codec::{self, merge_row, micros, parse_state, state_text};
use crate::pool::sqlx_error;

crate::shared::operations!(sqlx::MySql);

/// `db.system.name` (MariaDB and Galera speak the same protocol and are named as MySQL).
pub(crate) const SYSTEM: &str = "mysql";
crate::memories::memory_operations!(sqlx::MySql);
crate::leases::lease_operations!(sqlx::MySql);
crate::artifacts::artifact_operations!(sqlx::MySql);

/// What a transaction body can fail with: a driver error (maybe retried) or a final answer.
pub(super) enum Failure {
    Sql(&'static str, sqlx::Error),
    Done(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Done(e)
    }
}

pub(super) type Step<T> = std::result::Result<T, Failure>;

/// One attempt of a transaction body, borrowing the connection.
pub(super) type Attempt<'c, T> = Pin<Box<dyn Future<Output = Step<T>> + Send + 'c>>;

pub(super) fn sql_step(what: &'static str) -> impl FnOnce(sqlx::Error) -> Failure {
    move |e| Failure::Sql(what, e)
}

/// A final answer: a driver failure becomes a backend error named after the operation.
pub(super) fn finish<T>(what: &str, step: Step<T>) -> Result<T> {
    step.map_err(|failure| match failure {
        Failure::Sql(step, e) => sqlx_error(&format!("{what}: {step}"), e),
        Failure::Done(e) => e,
    })
}

/// A read-only transaction over one consistent snapshot.
async fn read_snapshot(
    conn: &mut MySqlConnection,
) -> std::result::Result<sqlx::Transaction<'_, sqlx::MySql>, sqlx::Error> {
    conn.begin_with("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").await
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
    User(&'a str, &'a str),
}

impl Shared<'_> {
    /// Its state; with `lock`, the row is locked until the transaction ends.
    async fn read(self, conn: &mut MySqlConnection, lock: bool) -> Step<Option<Map<String, Value>>> {
        let query = match (self, lock) {
            (Self::App(app), false) => sqlx::query(sql!("app_state_get")).bind(app),
            (Self::App(app), true) => sqlx::query(sql!("app_state_lock")).bind(app),
            (Self::User(app, user), false) => sqlx::query(sql!("user_state_get")).bind(app).bind(user),
            (Self::User(app, user), true) => sqlx::query(sql!("user_state_lock")).bind(app).bind(user),
        };
        read_state(conn, query).await
    }

    /// Merges `delta` into the row and removes `deleted` from it (the row created if missing),
    /// locking it when it changes it; returns its state. A missing row with nothing to merge is
    /// created without overwriting one a concurrent writer created first.
    async fn merge(
        self,
        conn: &mut MySqlConnection,
        delta: &Map<String, Value>,
        deleted: &[String],
        now: NaiveDateTime,
    ) -> Step<Map<String, Value>> {
        let changes = !delta.is_empty() || !deleted.is_empty();
        let existing = self.read(conn, changes).await?;
        if existing.is_none() && !changes {
            return self.ensure(conn, now).await;
        }
        let (state, write) = merge_row(existing, delta, deleted);
        if write {
            self.put(conn, state_text(&state), now).await?;
        }
        Ok(state)
    }

    /// Creates the row empty unless it is there (a plain read may have missed one another
    /// transaction committed since), then reads it locked: its state as committed.
    async fn ensure(self, conn: &mut MySqlConnection, now: NaiveDateTime) -> Step<Map<String, Value>> {
        let insert = match self {
            Self::App(app) => sqlx::query(sql!("app_state_ensure")).bind(app).bind(now),
            Self::User(app, user) => sqlx::query(sql!("user_state_ensure")).bind(app).bind(user).bind(now),
        };
        insert.execute(&mut *conn).await.map_err(sql_step("create shared state"))?;
        Ok(self.read(conn, true).await?.unwrap_or_default())
    }

    /// Writes the row's state `text` (an upsert: the row is created if missing).
    async fn put(self, conn: &mut MySqlConnection, text: String, now: NaiveDateTime) -> Step<()> {
        let put = match self {
            Self::App(app) => sqlx::query(sql!("app_state_put")).bind(app).bind(text).bind(now),
            Self::User(app, user) => sqlx::query(sql!("user_state_put")).bind(app).bind(user).bind(text).bind(now),
        };
        put.execute(&mut *conn).await.map_err(sql_step("write shared state")).map(drop)
    }
}

/// A write of app or user state without a session, and its log entry, in the caller's transaction.
async fn update_shared_in(conn: &mut MySqlConnection, update: &agentstate::store::SharedStateUpdate) -> Step<()> {
    let (app, user) = update.owner.shared()?;
    let shared = user.map_or(Shared::App(app), |user| Shared::User(app, user));
    let now = codec::naive(update.now_micros)?;
    shared.merge(conn, &update.delta, &update.deleted, now).await?;
    let write = agentstate::store::SharedStateWrite::of(update);
    sqlx::query(sql!("state_write_put"))
        .bind(app)
        .bind(user.unwrap_or_default())
        .bind(write.at_micros)
        .bind(&write.id)
        .bind(&write.origin)
        .bind(crate::state_log::keys_text(&write.set))
        .bind(crate::state_log::keys_text(&write.deleted))
        .execute(&mut *conn)
        .await
        .map_err(sql_step("log a state write"))
        .map(drop)
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

/// The state `owner` holds, as stored; with `lock`, its row is locked until the transaction ends.
pub(super) async fn owner_state(
    conn: &mut MySqlConnection,
    owner: &StateOwner,
    lock: bool,
) -> Step<Option<Map<String, Value>>> {
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

/// Replaces values of `owner` that are still the expected ones, in the caller's transaction.
pub(super) async fn swap_in(conn: &mut MySqlConnection, owner: &StateOwner, swaps: &[ValueSwap]) -> Step<usize> {
    let Some(mut state) = owner_state(conn, owner, true).await? else { return Ok(0) };
    let swapped = codec::swap(&mut state, swaps);
    if swapped > 0 {
        let text = state_text(&state);
        let statements: Vec<&str> = sql!("state_rewrite").split(';').map(str::trim).filter(|s| !s.is_empty()).collect();
        let query = match (owner, statements.as_slice()) {
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
}
