//! `app:` and `user:` state without a session (agentstate's extension): what every session of
//! the app, or of the user, sees under those prefixes; ADK for Python's `get_user_state`. Written
//! with the body of a session PATCH (`stateDelta`, `deleteKeys`), keys without their prefix,
//! merged key by key as an append's are.

use agentstate::store::SharedStateWrite;
use agentstate::{StateWrite, Value};
use axum::Json;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::json;

use super::sessions::state_patch;
use crate::error::ApiError;
use crate::limits::{Body, check_path_safe};
use crate::state::AppState;

/// `GET /apps/{app}/users/{user}/state`: the user's state, keys without `user:`.
pub(crate) async fn user_state(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    check_path_safe("app_name", &app)?;
    check_path_safe("user_id", &user)?;
    Ok(Json(Value::Object(state.service().user_state(&app, &user).await?)))
}

/// `GET /apps/{app}/state`: the app's state, keys without `app:`.
pub(crate) async fn app_state(State(state): State<AppState>, Path(app): Path<String>) -> Result<Json<Value>, ApiError> {
    check_path_safe("app_name", &app)?;
    Ok(Json(Value::Object(state.service().app_state(&app).await?)))
}

/// `PATCH /apps/{app}/users/{user}/state`: writes the user's state; answers it after the write.
pub(crate) async fn update_user_state(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    Body(bytes): Body,
) -> Result<Json<Value>, ApiError> {
    check_path_safe("app_name", &app)?;
    check_path_safe("user_id", &user)?;
    let (delta, deleted) = state_patch(&bytes)?;
    state.limits().check_state("stateDelta", &delta)?;
    let write = StateWrite { delta, deleted, origin: "PATCH /apps/{app_name}/users/{user_id}/state".into() };
    state.service().update_user_state(&app, &user, write).await?;
    Ok(Json(Value::Object(state.service().user_state(&app, &user).await?)))
}

/// `PATCH /apps/{app}/state`: writes the app's state; answers it after the write.
pub(crate) async fn update_app_state(
    State(state): State<AppState>,
    Path(app): Path<String>,
    Body(bytes): Body,
) -> Result<Json<Value>, ApiError> {
    check_path_safe("app_name", &app)?;
    let (delta, deleted) = state_patch(&bytes)?;
    state.limits().check_state("stateDelta", &delta)?;
    let write = StateWrite { delta, deleted, origin: "PATCH /apps/{app_name}/state".into() };
    state.service().update_app_state(&app, write).await?;
    Ok(Json(Value::Object(state.service().app_state(&app).await?)))
}

/// The query of a page of logged writes: `pageSize` (default 100, at most 1000), `pageToken`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WritesQuery {
    #[serde(default, alias = "page_size")]
    page_size: Option<usize>,
    #[serde(default, alias = "page_token")]
    page_token: Option<String>,
}

impl WritesQuery {
    fn page(&self) -> Result<(Option<(i64, String)>, usize), ApiError> {
        let before = self.page_token.as_deref().map(SharedStateWrite::position_of_page_token).transpose()?;
        Ok((before, self.page_size.unwrap_or(100)))
    }
}

/// A page of writes as the routes answer it: `{"writes": [{id, time, origin, setKeys,
/// deleteKeys}], "nextPageToken"}` (the token only when the page is full).
fn writes_page(writes: &[SharedStateWrite], size: usize) -> Value {
    let entries: Vec<Value> = writes
        .iter()
        .map(|w| {
            json!({"id": w.id, "time": agentstate::store::micros_to_secs(w.at_micros), "origin": w.origin,
                   "setKeys": w.set, "deleteKeys": w.deleted})
        })
        .collect();
    let mut page = json!({ "writes": entries });
    if let (true, Some(last)) = (writes.len() == size, writes.last()) {
        page["nextPageToken"] = json!(last.to_page_token());
    }
    page
}

/// `GET /apps/{app}/users/{user}/state/writes`: the user's log of state writes without a
/// session, newest first: when, what wrote them, which keys (no values).
pub(crate) async fn user_state_writes(
    State(state): State<AppState>,
    Path((app, user)): Path<(String, String)>,
    Query(query): Query<WritesQuery>,
) -> Result<Json<Value>, ApiError> {
    check_path_safe("app_name", &app)?;
    check_path_safe("user_id", &user)?;
    let (before, size) = query.page()?;
    let writes = state.service().user_state_writes(&app, &user, before, size).await?;
    Ok(Json(writes_page(&writes, size)))
}

/// `GET /apps/{app}/state/writes`: the app's log of state writes without a session.
pub(crate) async fn app_state_writes(
    State(state): State<AppState>,
    Path(app): Path<String>,
    Query(query): Query<WritesQuery>,
) -> Result<Json<Value>, ApiError> {
    check_path_safe("app_name", &app)?;
    let (before, size) = query.page()?;
    let writes = state.service().app_state_writes(&app, before, size).await?;
    Ok(Json(writes_page(&writes, size)))
}
