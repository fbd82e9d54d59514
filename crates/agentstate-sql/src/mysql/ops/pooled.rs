//! The MySQL operations as functions of the pool, with the signatures PostgreSQL's have (so one
//! set of trait impls, [`crate::shared::store_impls`], serves both): each write is a transaction,
//! run again if it deadlocked or timed out on a lock (a Galera certification conflict is a deadlock); each read, a snapshot on a connection of
//! its own.

use agentstate::store::{
    CommitOutcome, EventCommit, EventCopy, EventCursor, EventQuery, HistorySnapshot, ListQuery, LoadedSession,
    NewSession, SessionRead, StateOwner, UserDataCounts, ValueSwap,
};
use agentstate::{Event, Map, Result, Session, SessionKey, Value};
use sqlx::Connection as _;
use sqlx::mysql::MySqlConnection;

use super::{Attempt, Failure, Pool, finish};
use crate::pool::{LOCK_ATTEMPTS as ATTEMPTS, is_lock_failure, sqlx_error};

/// Runs `body` in a transaction, again if it deadlocked or timed out on a lock.
async fn transaction<T, F>(pool: &Pool, what: &str, mut body: F) -> Result<T>
where
    F: for<'c> FnMut(&'c mut MySqlConnection) -> Attempt<'c, T>,
{
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let mut conn = pool.acquire().await.map_err(|e| sqlx_error(what, e))?;
        let mut tx = conn.begin().await.map_err(|e| sqlx_error(what, e))?;
        match body(&mut tx).await {
            // On a Galera cluster a conflict with a write certified on another node shows at
            // COMMIT, as a deadlock: the transaction was rolled back, so it runs again too.
            Ok(value) => match tx.commit().await {
                Ok(()) => return Ok(value),
                Err(e) if is_lock_failure(&e) && attempt < ATTEMPTS => {}
                Err(e) => return Err(sqlx_error(what, e)),
            },
            Err(Failure::Sql(_, e)) if is_lock_failure(&e) && attempt < ATTEMPTS => {}
            Err(failure) => return finish(what, Err(failure)),
        }
        // Apart, so two writers that keep meeting stop meeting.
        tokio::time::sleep(std::time::Duration::from_millis(1 << attempt)).await;
    }
}

pub(in crate::mysql) async fn update_shared_state(
    pool: &Pool,
    update: &agentstate::store::SharedStateUpdate,
) -> Result<()> {
    transaction(pool, "writing shared state", |conn| {
        let update = update.clone();
        Box::pin(async move { super::update_shared_in(conn, &update).await })
    })
    .await
}

/// A connection for a read of its own.
async fn connection(pool: &Pool, what: &str) -> Result<sqlx::pool::PoolConnection<sqlx::MySql>> {
    pool.acquire().await.map_err(|e| sqlx_error(what, e))
}

pub(in crate::mysql) async fn create(pool: &Pool, new: NewSession) -> Result<Session> {
    transaction(pool, "creating a session", |conn| {
        let new = new.clone();
        Box::pin(async move { super::create_in(conn, &new).await })
    })
    .await
}

pub(in crate::mysql) async fn get_session(
    pool: &Pool,
    key: &SessionKey,
    read: &SessionRead,
) -> Result<Option<LoadedSession>> {
    let what = "loading a session";
    finish(what, super::get_in(&mut *connection(pool, what).await?, key, read).await)
}

pub(in crate::mysql) async fn list(pool: &Pool, query: &ListQuery) -> Result<Vec<Session>> {
    let what = "listing sessions";
    finish(what, super::list_in(&mut *connection(pool, what).await?, query).await)
}

pub(in crate::mysql) async fn commit(pool: &Pool, commit: EventCommit) -> Result<CommitOutcome> {
    transaction(pool, "appending an event", |conn| {
        let commit = commit.clone();
        Box::pin(async move { super::commit_in(conn, &commit).await })
    })
    .await
}

pub(in crate::mysql) async fn events(pool: &Pool, query: &EventQuery) -> Result<Option<Vec<Event>>> {
    let what = "reading events";
    finish(what, super::events_in(&mut *connection(pool, what).await?, query).await)
}

pub(in crate::mysql) async fn put_snapshots(
    pool: &Pool,
    key: &SessionKey,
    snapshots: &[HistorySnapshot],
) -> Result<()> {
    transaction(pool, "keeping history snapshots", |conn| {
        let (key, snapshots) = (key.clone(), snapshots.to_vec());
        Box::pin(async move {
            for snapshot in &snapshots {
                super::put_snapshot(conn, &key, snapshot).await?;
            }
            Ok(())
        })
    })
    .await
}

/// The copy in SQL; `None` when the events cannot be copied as they are (the caller replays).
pub(in crate::mysql) async fn copy_events(pool: &Pool, copy: &EventCopy) -> Result<Option<Option<EventCursor>>> {
    let copied = transaction(pool, "copying events", |conn| {
        let copy = copy.clone();
        Box::pin(async move { super::copy_in(conn, &copy).await })
    })
    .await?;
    Ok(copied.map(|count| (count > 0).then(|| copy.upto.clone())))
}

pub(in crate::mysql) async fn drop_events_before(
    pool: &Pool,
    key: &SessionKey,
    cut_micros: i64,
    boundary: &HistorySnapshot,
) -> Result<usize> {
    transaction(pool, "dropping old events", |conn| {
        let (key, boundary) = (key.clone(), boundary.clone());
        Box::pin(async move { super::drop_events_in(conn, &key, cut_micros, &boundary).await })
    })
    .await
}

pub(in crate::mysql) async fn delete_expired(pool: &Pool, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>> {
    transaction(pool, "sweeping expired sessions", |conn| {
        Box::pin(super::delete_expired_in(conn, before_micros, limit))
    })
    .await
}

pub(in crate::mysql) async fn erase_user(pool: &Pool, app: &str, user: &str) -> Result<UserDataCounts> {
    transaction(pool, "erasing a user", |conn| {
        let (app, user) = (app.to_owned(), user.to_owned());
        Box::pin(async move { super::erase_in(conn, &app, &user).await })
    })
    .await
}

pub(in crate::mysql) async fn stored_state(pool: &Pool, owner: &StateOwner) -> Result<Map<String, Value>> {
    let what = "reading state";
    let state = finish(what, super::owner_state(&mut *connection(pool, what).await?, owner, false).await)?;
    Ok(state.unwrap_or_default())
}

pub(in crate::mysql) async fn swap_values(pool: &Pool, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
    transaction(pool, "rewriting state", |conn| {
        let (owner, swaps) = (owner.clone(), swaps.to_vec());
        Box::pin(async move { super::swap_in(conn, &owner, &swaps).await })
    })
    .await
}
