//! Events: the history of a session, and the carrier of state changes (`actions.state_delta`).
//!
//! The JSON form is the reference's storage form (snake_case field names, absent fields omitted);
//! camelCase input is accepted too. Fields not modelled here survive a round trip in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::content::Content;
use crate::time::{Timestamp, now_secs};

/// Where an event keeps its time to the nanosecond when `timestamp`, a float, cannot say it
/// exactly: ADK's internal metadata, stored and never shown (see [`Event::time`]).
pub(crate) const EXACT_TIME_KEY: &str = "__adk_internal_timestamp_nanos";

/// Where an event keeps the time its writer gave it when storing placed it later (see
/// [`Event::keep_given_time`]): ADK's internal metadata, stored and never shown on ADK's routes.
pub(crate) const GIVEN_TIME_KEY: &str = "__adk_internal_given_timestamp";

/// One entry of a session's history.
///
/// ```
/// use agentstate::{Content, Event};
/// use serde_json::json;
///
/// let event = Event::new("inv_1")
///     .author("user")
///     .content(Content::text("user", "Hello"))
///     .delta("task_status", json!("active"))
///     .delta("user:login_count", json!(1));
/// assert_eq!(event.actions.state_delta.len(), 2);
/// assert!(event.id.is_empty(), "the service assigns an id on append");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// A streaming fragment; partial events are never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// Whether the model's turn is complete.
    #[serde(default, alias = "turnComplete", skip_serializing_if = "Option::is_none")]
    pub turn_complete: Option<bool>,
    /// Error code reported by the model or a tool.
    #[serde(default, alias = "errorCode", skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Error message reported by the model or a tool.
    #[serde(default, alias = "errorMessage", skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The invocation (one user turn, all agents included) that produced the event.
    #[serde(default, alias = "invocationId")]
    pub invocation_id: String,
    /// `"user"` or the name of the agent that produced the event.
    #[serde(default)]
    pub author: String,
    /// Side effects: state changes, artifact versions, control flow.
    #[serde(default)]
    pub actions: EventActions,
    /// Ids of long-running tool calls this event started.
    #[serde(default, alias = "longRunningToolIds", skip_serializing_if = "Option::is_none")]
    pub long_running_tool_ids: Option<Vec<String>>,
    /// The agent branch (`parent.child`) that produced the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Unique within its session; assigned on append when empty.
    #[serde(default)]
    pub id: String,
    /// Epoch seconds, as ADK for Python counts them: the float nearest the event's time. The
    /// time itself is kept to the nanosecond ([`time`](Self::time)); storage orders a session's
    /// events by the microsecond nearest it, strictly increasing. Now, when the JSON read has
    /// none.
    #[serde(default = "defaulted_timestamp")]
    pub timestamp: f64,
    /// Keys this event deletes from the state, after `actions.state_delta` is applied (each
    /// also appears there as `null`, the value ADK for Python sees: it ignores this field). A
    /// field of the event, not of `actions`, because the reference's `EventActions` refuses
    /// fields it does not know.
    #[serde(default, alias = "deletedKeys", skip_serializing_if = "Vec::is_empty")]
    pub deleted_keys: Vec<String>,
    /// On a rewind to an event: the event after which, up to this one, nothing is live any
    /// more (see [`history::live_events`](crate::history::live_events)). A field of the event
    /// for the same reason as `deleted_keys`.
    #[serde(default, alias = "rewindAfterEventId", skip_serializing_if = "Option::is_none")]
    pub rewind_after_event_id: Option<String>,
    /// Fields not modelled here, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

thread_local! {
    /// Set when an event read from JSON on this thread had no `timestamp` (see
    /// [`Event::from_stored_json`]).
    static TIMESTAMP_DEFAULTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn defaulted_timestamp() -> f64 {
    TIMESTAMP_DEFAULTED.set(true);
    now_secs()
}

impl Default for Event {
    fn default() -> Self {
        Self {
            content: None,
            partial: None,
            turn_complete: None,
            error_code: None,
            error_message: None,
            invocation_id: String::new(),
            author: String::new(),
            actions: EventActions::default(),
            long_running_tool_ids: None,
            branch: None,
            id: String::new(),
            timestamp: now_secs(),
            deleted_keys: Vec::new(),
            rewind_after_event_id: None,
            extra: Map::new(),
        }
    }
}

impl Event {
    /// An event of `invocation_id`, timestamped now.
    pub fn new(invocation_id: impl Into<String>) -> Self {
        Self { invocation_id: invocation_id.into(), ..Self::default() }
    }

    /// Reads an event as stored (its JSON text, snake_case or camelCase), and says whether the
    /// text had a `timestamp` of its own: a store falls back to its row's time when it had none,
    /// as the reference does. One pass over the text.
    ///
    /// ```
    /// use agentstate::Event;
    /// let (event, own) = Event::from_stored_json(r#"{"author": "a", "timestamp": 1.5}"#)?;
    /// assert!(own && event.timestamp == 1.5);
    /// let (_, own) = Event::from_stored_json(r#"{"author": "a", "actions": {"state_delta": {"timestamp": 2}}}"#)?;
    /// assert!(!own, "a nested `timestamp` is not the event's");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_stored_json(text: &str) -> serde_json::Result<(Self, bool)> {
        TIMESTAMP_DEFAULTED.set(false);
        let event = serde_json::from_str(text)?;
        Ok((event, !TIMESTAMP_DEFAULTED.replace(false)))
    }

    /// A fresh event id (a UUIDv4, as the reference uses).
    pub fn new_id() -> String {
        uuid::Uuid::new_v4().to_string()
    }

    /// Sets the author.
    #[must_use]
    pub fn author(mut self, author: impl Into<String>) -> Self {
        self.author = author.into();
        self
    }

    /// Sets the content.
    #[must_use]
    pub fn content(mut self, content: Content) -> Self {
        self.content = Some(content);
        self
    }

    /// Deletes `key` (any scope; a `temp:` key only from the invocation's view): the key is
    /// removed when the event is appended. Recorded as `null` in `actions.state_delta` and in
    /// [`deleted_keys`](Self::deleted_keys).
    #[must_use]
    pub fn delete(mut self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.actions.state_delta.insert(key.clone(), Value::Null);
        if !self.deleted_keys.contains(&key) {
            self.deleted_keys.push(key);
        }
        self
    }

    /// Adds one key to `actions.state_delta`.
    #[must_use]
    pub fn delta(mut self, key: impl Into<String>, value: Value) -> Self {
        let key = key.into();
        self.deleted_keys.retain(|k| *k != key);
        self.actions.state_delta.insert(key, value);
        self
    }

    /// Sets the timestamp (epoch seconds).
    #[must_use]
    pub fn at(mut self, timestamp: f64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// The event's time to the nanosecond: the time it was given with
    /// [`set_time`](Self::set_time) while `timestamp` still says it, else `timestamp`'s own
    /// (to the nearest nanosecond; the epoch for a float that is not a time).
    ///
    /// ```
    /// use agentstate::{Event, Timestamp};
    /// let mut event = Event::new("inv");
    /// event.set_time(Timestamp::from_nanos(1_795_318_375_327_913_461));
    /// assert_eq!(event.time().nanos(), 1_795_318_375_327_913_461);
    /// assert_eq!(event.timestamp, 1_795_318_375.327_913_461, "the float nearest it");
    /// event.timestamp = 2.5; // a new float is a new time
    /// assert_eq!(event.time(), Timestamp::from_nanos(2_500_000_000));
    /// ```
    pub fn time(&self) -> Timestamp {
        let float = Timestamp::from_secs(self.timestamp).unwrap_or_default();
        let exact = self
            .extra
            .get("custom_metadata")
            .and_then(|meta| meta.get(EXACT_TIME_KEY))
            .and_then(Value::as_i64)
            .map(Timestamp::from_nanos);
        match exact {
            Some(exact) if exact.secs() == self.timestamp => exact,
            _ => float,
        }
    }

    /// Sets the event's time to the nanosecond: `timestamp` becomes the float nearest it, and
    /// when that float says it only approximately, the exact time is kept beside it in ADK's
    /// internal metadata (stored, never shown).
    pub fn set_time(&mut self, time: Timestamp) {
        self.timestamp = time.secs();
        let exact = Timestamp::from_secs(self.timestamp) == Some(time);
        if exact {
            if let Some(Value::Object(meta)) = self.extra.get_mut("custom_metadata")
                && meta.shift_remove(EXACT_TIME_KEY).is_some()
                && meta.is_empty()
            {
                self.extra.shift_remove("custom_metadata");
            }
            return;
        }
        // Metadata that is not an object is the caller's to keep: the float alone says the time.
        if let Value::Object(meta) = self.extra.entry("custom_metadata").or_insert_with(|| Value::Object(Map::new())) {
            meta.insert(EXACT_TIME_KEY.into(), Value::from(time.nanos()));
        }
    }

    /// Places the event after a session's last one, stored at microsecond `marker`: its time
    /// stays exactly as it is when the microsecond nearest it is later, and is moved to the
    /// next whole one (1 µs after `marker`) when it is not: the one case a time is changed, so
    /// that a session's events are strictly increasing by the microsecond they are stored at.
    /// Returns that microsecond (the session's new marker).
    pub(crate) fn place_after(&mut self, marker: i64) -> i64 {
        let time = self.time();
        let micros = time.micros().max(marker.saturating_add(1));
        if micros == time.micros() {
            // Kept where it was: its time says the given one.
            self.drop_given_time();
        } else {
            self.set_time(Timestamp::from_micros(micros));
        }
        micros
    }

    /// Removes the given time [`keep_given_time`](Self::keep_given_time) kept (and metadata it
    /// leaves empty).
    fn drop_given_time(&mut self) {
        if let Some(Value::Object(meta)) = self.extra.get_mut("custom_metadata")
            && meta.shift_remove(GIVEN_TIME_KEY).is_some()
            && meta.is_empty()
        {
            self.extra.shift_remove("custom_metadata");
        }
    }

    /// Asks storing to keep the time the event has now should it place the event later (after
    /// a later event of the session): [`given_time`](Self::given_time) then answers it. Google's
    /// API asks this for every event appended through it, as the managed service answers every
    /// event's time as sent (ADK for Go's session suite appends events dated before their
    /// session, and at Go's zero time); the history keeps its order and the session its marker
    /// either way.
    pub fn keep_given_time(&mut self) {
        let time = self.time();
        if let Value::Object(meta) = self.extra.entry("custom_metadata").or_insert_with(|| Value::Object(Map::new())) {
            meta.insert(GIVEN_TIME_KEY.into(), Value::String(time.rfc3339()));
        }
    }

    /// The time the event was appended with when storing placed it later and it asked to keep
    /// it ([`keep_given_time`](Self::keep_given_time)); else its [`time`](Self::time).
    pub fn given_time(&self) -> Timestamp {
        self.extra
            .get("custom_metadata")
            .and_then(|meta| meta.get(GIVEN_TIME_KEY))
            .and_then(Value::as_str)
            .and_then(|text| Timestamp::parse_rfc3339(text).ok())
            .unwrap_or_else(|| self.time())
    }

    /// Marks the event as a streaming fragment (never stored).
    #[must_use]
    pub fn partial(mut self, partial: bool) -> Self {
        self.partial = Some(partial);
        self
    }

    /// Whether this is a streaming fragment.
    pub fn is_partial(&self) -> bool {
        self.partial == Some(true)
    }

    /// The event's text (non-thought text parts concatenated), empty without content.
    pub fn text(&self) -> String {
        self.content.as_ref().map(Content::joined_text).unwrap_or_default()
    }

    /// Whether two events are the same event, as a retry of an append would resend it: equal in
    /// everything but the timestamp, which the service may have moved forward when storing.
    pub fn same_as_retry(&self, other: &Event) -> bool {
        let timeless = |event: &Event| {
            let mut event = event.clone();
            event.drop_given_time();
            event.set_time(Timestamp::default());
            event
        };
        timeless(self) == timeless(other)
    }
}

/// The side effects an event carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventActions {
    /// Do not summarise the function response with the model.
    #[serde(default, alias = "skipSummarization", skip_serializing_if = "Option::is_none")]
    pub skip_summarization: Option<bool>,
    /// State changes, keyed with their scope prefix (`app:`, `user:`, `temp:` or none).
    #[serde(default, alias = "stateDelta")]
    pub state_delta: Map<String, Value>,
    /// Artifact name → new version number.
    #[serde(default, alias = "artifactDelta")]
    pub artifact_delta: Map<String, Value>,
    /// Hand the conversation to the named agent.
    #[serde(default, alias = "transferToAgent", skip_serializing_if = "Option::is_none")]
    pub transfer_to_agent: Option<String>,
    /// Leave the enclosing loop agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate: Option<bool>,
    /// On a rewind event: the invocation whose first event, and everything after it up to this
    /// event, is no longer live (see [`history::live_events`](crate::history::live_events)).
    #[serde(default, alias = "rewindBeforeInvocationId", skip_serializing_if = "Option::is_none")]
    pub rewind_before_invocation_id: Option<String>,
    /// Fields not modelled here, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Numbers read back exactly as written (found by fuzzing: without exact float parsing a
    /// value could move by one unit in the last place on every write and read).
    #[test]
    fn numbers_survive_storage_exactly() {
        let event = Event::new("i").delta("x", json!(3.3333333333333335e100)).delta("y", json!(0.1 + 0.2));
        let stored = serde_json::to_string(&event).unwrap();
        let back: Event = serde_json::from_str(&stored).unwrap();
        assert_eq!(back, event);
        assert_eq!(serde_json::to_string(&back).unwrap(), stored);
    }

    /// The `event_data` ADK for Python 2.13 stores, verbatim.
    fn reference_event_data() -> Value {
        json!({"content": {"parts": [{"text": "hello"}], "role": "user"}, "invocation_id": "inv1",
               "author": "user",
               "actions": {"state_delta": {"k": 2, "user:u": "U1b", "app:a": "A2", "none": null},
                           "artifact_delta": {}, "requested_auth_configs": {},
                           "requested_tool_confirmations": {}},
               "node_info": {"path": ""}, "id": "57616c03-e594-438a-aac4-c55533e95e74",
               "timestamp": 1795318375.2811546})
    }

    #[test]
    fn reference_event_data_round_trips_by_value() {
        let raw = reference_event_data();
        let event: Event = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(event.author, "user");
        assert_eq!(event.actions.state_delta["k"], json!(2));
        assert!(event.extra.contains_key("node_info"));
        assert!(event.actions.extra.contains_key("requested_auth_configs"));
        assert_eq!(serde_json::to_value(&event).unwrap(), raw);
    }

    #[test]
    fn camel_case_fields_are_read() {
        let event: Event = serde_json::from_value(json!({
            "invocationId": "i", "author": "a",
            "actions": {"stateDelta": {"x": 1}, "transferToAgent": "b", "skipSummarization": true},
            "longRunningToolIds": ["t"], "turnComplete": true, "id": "e", "timestamp": 1.5
        }))
        .unwrap();
        assert_eq!(event.invocation_id, "i");
        assert_eq!(event.actions.state_delta["x"], json!(1));
        assert_eq!(event.actions.transfer_to_agent.as_deref(), Some("b"));
        assert_eq!(event.long_running_tool_ids, Some(vec!["t".to_owned()]));
    }

    #[test]
    fn missing_timestamp_defaults_to_now() {
        let before = now_secs();
        let event: Event = serde_json::from_value(json!({"author": "a"})).unwrap();
        assert!(event.timestamp >= before);
    }

    #[test]
    fn retry_comparison_ignores_only_the_timestamp() {
        let a = Event::new("i").delta("k", json!(1));
        let a = Event { id: "e1".into(), ..a };
        assert!(a.same_as_retry(&a.clone().at(99.0)));
        assert!(!a.same_as_retry(&a.clone().delta("k", json!(2))));
        assert!(!a.same_as_retry(&Event { id: "e2".into(), ..a.clone() }));
    }
}
