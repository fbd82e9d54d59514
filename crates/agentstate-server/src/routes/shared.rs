//! `app:` and `user:` state without a session (agentstate's extension): what every session of
//! the app, or of the user, sees under those prefixes; ADK for Python's `get_user_state`. Written
//! with the body of a session PATCH (`stateDelta`, `deleteKeys`), keys without their prefix,
//! merged key by key as an append's are.

use agentstate::Value;
use axum::Json;
use axum::extract::{Path, State};

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
    state.service().update_user_state(&app, &user, delta, &deleted).await?;
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
    state.service().update_app_state(&app, delta, &deleted).await?;
    Ok(Json(Value::Object(state.service().app_state(&app).await?)))
}
