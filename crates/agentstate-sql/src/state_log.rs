//! The rows of the logs of state writes without a session (`agentstate_state_writes`), as every
//! SQL dialect keeps them.

use agentstate::store::{SharedStateWrite, StateOwner};

/// The `(app_name, user_id)` columns of an owner's log of state writes: `''` as the app's user.
pub(crate) fn log_owner(owner: &StateOwner) -> agentstate::Result<(&str, &str)> {
    let (app, user) = owner.shared()?;
    Ok((app, user.unwrap_or_default()))
}

/// The keys of a logged write, as its row keeps them (a JSON array).
pub(crate) fn keys_text(keys: &[String]) -> String {
    serde_json::Value::from(keys.to_vec()).to_string()
}

/// A logged write from its row's columns.
pub(crate) fn state_write(
    at_micros: i64,
    id: String,
    origin: String,
    set: &str,
    deleted: &str,
) -> agentstate::Result<SharedStateWrite> {
    let keys = |text: &str| {
        serde_json::from_str::<Vec<String>>(text).map_err(|e| agentstate::Error::Backend {
            message: format!("a logged state write {id} has unreadable keys: {e}"),
            retryable: false,
            source: None,
        })
    };
    let (set, deleted) = (keys(set)?, keys(deleted)?);
    Ok(SharedStateWrite { set, deleted, id, at_micros, origin })
}
