//! `app:` and `user:` state without a session (agentstate's extension): what every session of
//! the app, or of the user, sees under those prefixes; ADK for Python's `get_user_state`.

use agentstate::Value;
use axum::Json;
use axum::extract::{Path, State};

use crate::error::ApiError;
use crate::limits::check_path_safe;
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
