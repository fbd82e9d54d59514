//! Validated identifiers. A session is always addressed by the triple (app, user, session id):
//! two users may each own a session `s1`, so no call takes a session id alone.

use std::fmt;

use crate::error::{Error, Result};

/// The longest id accepted, in characters (the reference's `VARCHAR(128)` columns).
pub const MAX_ID_CHARS: usize = 128;

/// Checks one id: 1–128 characters, no control characters, no leading or trailing whitespace.
///
/// `field` names the argument in the error, e.g. `"user_id"`.
pub fn validate_id(field: &'static str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    let chars = value.chars().count();
    if chars > MAX_ID_CHARS {
        return Err(Error::invalid(field, format!("is {chars} characters long; at most {MAX_ID_CHARS} are allowed")));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(field, format!("contains the control character {c:?}; ids must be printable")));
    }
    let starts = value.chars().next().is_some_and(char::is_whitespace);
    let ends = value.chars().next_back().is_some_and(char::is_whitespace);
    if starts || ends {
        return Err(Error::invalid(field, format!("{value:?} has leading or trailing whitespace")));
    }
    Ok(())
}

/// The identity of a session: app name, user id and session id, each validated.
///
/// ```
/// use agentstate::SessionKey;
/// let key = SessionKey::new("my_app", "alice", "s1")?;
/// assert_eq!(key.session_id(), "s1");
/// assert!(SessionKey::new("my_app", " alice", "s1").is_err());
/// # Ok::<(), agentstate::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    app_name: String,
    user_id: String,
    session_id: String,
}

impl SessionKey {
    /// Validates and builds a key.
    pub fn new(app_name: impl Into<String>, user_id: impl Into<String>, session_id: impl Into<String>) -> Result<Self> {
        let key = Self { app_name: app_name.into(), user_id: user_id.into(), session_id: session_id.into() };
        validate_id("app_name", &key.app_name)?;
        validate_id("user_id", &key.user_id)?;
        validate_id("session_id", &key.session_id)?;
        Ok(key)
    }

    /// A key read back from storage, not validated: stores use it for rows another program wrote
    /// (the reference accepts ids such as `""` or `" pad "`), so that such sessions can still be
    /// listed, loaded and deleted.
    pub fn from_storage(
        app_name: impl Into<String>,
        user_id: impl Into<String>,
        session_id: impl Into<String>,
    ) -> Self {
        Self { app_name: app_name.into(), user_id: user_id.into(), session_id: session_id.into() }
    }

    /// The application the session belongs to.
    pub fn app_name(&self) -> &str {
        &self.app_name
    }

    /// The user the session belongs to.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// The session's id, unique within (app, user).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.app_name, self.user_id, self.session_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn field_of(err: Error) -> &'static str {
        match err {
            Error::InvalidArgument { field, .. } => field,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn accepts_ordinary_and_unicode_ids() {
        for id in ["s1", "a b", "日本語", "x".repeat(128).as_str(), "../odd-but-printable"] {
            validate_id("session_id", id).unwrap();
        }
    }

    #[test]
    fn rejects_bad_ids_naming_the_field() {
        let long = "é".repeat(129);
        for bad in ["", " s", "s ", "\ts", "a\nb", "nul\0", long.as_str()] {
            let err = validate_id("user_id", bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
            assert_eq!(field_of(err), "user_id", "for {bad:?}");
        }
    }

    #[test]
    fn key_names_the_failing_part() {
        assert_eq!(field_of(SessionKey::new("", "u", "s").unwrap_err()), "app_name");
        assert_eq!(field_of(SessionKey::new("a", "", "s").unwrap_err()), "user_id");
        assert_eq!(field_of(SessionKey::new("a", "u", "").unwrap_err()), "session_id");
    }
}
