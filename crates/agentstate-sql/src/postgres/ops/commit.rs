//! Creating a session and appending to one: each one statement (one round trip, one atomic
//! transaction); re-creating an expired id takes a transaction of two.

use std::sync::Arc;

use agentstate::store::{CommitOutcome, EventCommit, NewSession, merge_scopes};
use agentstate::{ConflictKind, Error, Event, Map, Result, Session, Value};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{Connection, Row as _};

use super::{Pool, get, get_json, object};
use crate::codec::{self, naive};
use crate::pool::{is_unique_violation, keyed, sqlx_error};
use crate::shared::expiry_time;

fn delta_or_null(delta: &Map<String, Value>) -> Option<Json<&Map<String, Value>>> {
    (!delta.is_empty()).then_some(Json(delta))
}

/// Runs `session_create` for `new` on `executor`.
async fn create_row<'c, E>(executor: E, new: &NewSession) -> Result<PgRow>
where
    E: sqlx::Executor<'c, Database = sqlx::Postgres>,
{
    let NewSession { key, state, create_time_micros, attributes, history_start } = new;
    keyed(sql!("session_create"), key)
        .bind(Json(&state.session))
        .bind(Json(&state.user))
        .bind(Json(&state.app))
        .bind(naive(*create_time_micros)?)
        .bind(attributes.display_name.as_deref())
        .bind((!attributes.labels.is_empty()).then_some(Json(&attributes.labels)))
        .bind(attributes.expire_time_micros.map(naive).transpose()?)
        .bind(history_start.as_ref().map(Json))
        .fetch_one(executor)
        .await
        .map_err(|e| sqlx_error("creating a session", e))
}

pub(in crate::postgres) async fn create(pool: &Pool, new: NewSession) -> Result<Session> {
    let taken = || Error::AlreadyExists { session_id: new.key.session_id().to_owned() };
    let mut row = create_row(pool, &new).await?;
    if get::<i64>(&row, "created")? == 0 {
        if !get::<bool>(&row, "expired")? {
            return Err(taken());
        }
        // The id is an expired session's: it goes, and the session is created, in one transaction.
        let fail = |e| sqlx_error("creating a session", e);
        let mut conn = pool.acquire().await.map_err(fail)?;
        let mut tx = conn.begin().await.map_err(fail)?;
        keyed(sql!("session_expired_delete"), &new.key)
            .bind(naive(new.create_time_micros)?)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
        row = create_row(&mut *tx, &new).await?;
        tx.commit().await.map_err(fail)?;
        if get::<i64>(&row, "created")? == 0 {
            return Err(taken());
        }
    }
    let NewSession { key, state, create_time_micros, attributes, .. } = new;
    let app = object(get_json(&row, "app_state")?, "app_states.state")?;
    let user = object(get_json(&row, "user_state")?, "user_states.state")?;
    let merged = merge_scopes(&state.session, &app, &user);
    Ok(Session::from_storage(key, merged, Vec::<Event>::new(), create_time_micros)
        .created_at(create_time_micros)
        .with_attributes((!attributes.is_empty()).then(|| Arc::new(attributes))))
}

pub(in crate::postgres) async fn commit(pool: &Pool, commit: EventCommit) -> Result<CommitOutcome> {
    let EventCommit { key, event, delta, deleted, .. } = &commit;
    let result = keyed(sql!("event_commit"), key)
        .bind(&event.id)
        .bind(&event.invocation_id)
        .bind(naive(commit.timestamp_micros)?)
        .bind(Json(event.as_ref()))
        .bind(naive(commit.expected_last_update_micros)?)
        .bind(Json(&delta.session))
        .bind(delta_or_null(&delta.user))
        .bind(delta_or_null(&delta.app))
        .bind(&deleted.session)
        .bind(&deleted.user)
        .bind(&deleted.app)
        .bind(expiry_time(commit.now_micros)?)
        .bind(commit.extend_expiry_to.map(naive).transpose()?)
        .bind(agentstate::compaction::Facts::of(event).to_text())
        .fetch_one(pool)
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
    if !get::<bool>(&row, "live")? {
        return Err(Error::NotFound { session_id: key.session_id().to_owned() });
    }
    if let Some(invocation) = get::<Option<String>>(&row, "dup_invocation_id")? {
        let data = row
            .try_get::<Option<Json<Value>>, _>("dup_event_data")
            .map_err(|e| sqlx_error("reading dup_event_data", e))?
            .map_or_else(|| Value::Object(Map::new()), |j| j.0);
        let micros = get::<Option<i64>>(&row, "dup_micros")?.unwrap_or_default();
        let existing = codec::decode_event(data, event.id.clone(), invocation, micros)?;
        return CommitOutcome::of_stored(existing, event);
    }
    // Live, no duplicate: changed since the caller loaded it, or by a writer that committed while
    // this statement waited for the row lock.
    Err(Error::stale())
}
