//! What a memory is: a piece of content a user's agent may recall, with where it came from.

use serde_json::{Map, Value};

use crate::content::Content;
use crate::error::Result;
use crate::key::validate_id;

/// Whose memories: a user of an app. Memories never leave it: every read, write and search
/// names one owner, and sees that owner's memories only.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryOwner {
    app_name: String,
    user_id: String,
}

impl MemoryOwner {
    /// Validates and builds an owner (the rules of session ids).
    ///
    /// ```
    /// use agentstate::memory::MemoryOwner;
    /// assert!(MemoryOwner::new("my_app", "alice").is_ok());
    /// assert!(MemoryOwner::new("my_app", "").is_err());
    /// ```
    pub fn new(app_name: impl Into<String>, user_id: impl Into<String>) -> Result<Self> {
        let owner = Self { app_name: app_name.into(), user_id: user_id.into() };
        validate_id("app_name", &owner.app_name)?;
        validate_id("user_id", &owner.user_id)?;
        Ok(owner)
    }

    /// An owner read back from storage, not validated.
    pub fn from_storage(app_name: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self { app_name: app_name.into(), user_id: user_id.into() }
    }

    /// The app.
    pub fn app_name(&self) -> &str {
        &self.app_name
    }

    /// The user.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }
}

impl std::fmt::Display for MemoryOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.app_name, self.user_id)
    }
}

/// The metadata key a Memory Bank memory's own fields are kept under ([`super::bank`]; never
/// shown as metadata).
pub(crate) const BANK_KEY: &str = "agentstate_bank";

/// One memory, as ADK's `MemoryEntry` carries it, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// The id: the event's id for a memory taken from an event, else the caller's or a
    /// generated UUID. Unique per owner and source.
    pub id: String,
    /// The session it came from; `None` for events added without a session and for memories
    /// written directly.
    pub session_id: Option<String>,
    /// What is recalled.
    pub content: Content,
    /// The caller's metadata.
    pub custom_metadata: Map<String, Value>,
    /// Who said it (the event's author).
    pub author: Option<String>,
    /// When it was said, ISO 8601 (an event's time in UTC; a direct write's own text).
    pub timestamp: Option<String>,
    /// When it was stored, epoch microseconds: memories of one call get consecutive
    /// microseconds in the order given, and keep them when their source is added again.
    pub create_micros: i64,
    /// When it expires, epoch microseconds; `None`: never.
    pub expire_micros: Option<i64>,
}

impl Memory {
    /// The text searched: the text of every part, joined by spaces (as ADK's memory services
    /// join it, thoughts included).
    pub fn text(&self) -> String {
        text_of(&self.content)
    }

    /// Whether it is still live at `now_micros`.
    pub fn live_at(&self, now_micros: i64) -> bool {
        self.expire_micros.is_none_or(|expire| expire > now_micros)
    }
}

/// The text ADK's memory services search in a content: every non-empty text part, joined by
/// spaces.
pub fn text_of(content: &Content) -> String {
    let texts: Vec<&str> = content.parts().iter().filter_map(|p| p.text.as_deref()).filter(|t| !t.is_empty()).collect();
    texts.join(" ")
}
