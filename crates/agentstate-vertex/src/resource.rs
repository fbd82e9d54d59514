//! The API's resources read into agentstate's types and written from them: the Agent Engine
//! JSON of [`agentstate::wire::engine`] (shared with the server), with this client's errors.

use agentstate::wire::engine;
use agentstate::{Error, Event, Map, Session, Value};

fn unreadable(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::Backend {
        message: format!("the service answered {what} that cannot be read: {detail}"),
        retryable: false,
        source: None,
    }
}

pub(crate) use engine::{create_body, rfc3339};

/// A session resource, as a handle of `app`. Its last update time is the storage marker.
pub(crate) fn session(resource: &Value, app: &str, events: Vec<Event>) -> Result<Session, Error> {
    engine::session_from_resource(resource, app, events).map_err(|e| unreadable("a session", e))
}

/// The items of the list `field` of `body`, taken out of it.
pub(crate) fn take_array(body: &mut Value, field: &str) -> Result<Vec<Value>, Error> {
    match body.get_mut(field).map(Value::take) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(unreadable("a page", format!("{field} {other} is not a list"))),
    }
}

/// An event resource: the ADK event in `rawEvent` when there is one, else rebuilt from the
/// typed fields; the time is the resource's.
pub(crate) fn event(resource: Value) -> Result<Event, Error> {
    let Value::Object(resource) = resource else { return Err(unreadable("an event", "not an object")) };
    engine::event_from_resource(resource).map_err(|e| unreadable("an event", e))
}

/// The body of `:appendEvent`: the typed fields the managed service reads, and the whole event
/// as `rawEvent` (without its time, which is the typed one, to the nanosecond). `delta` is what
/// the service is to merge.
pub(crate) fn append_body(event: &Event, delta: &Map<String, Value>) -> Value {
    let mut body = engine::event_resource(event, delta);
    if let Some(Value::Object(raw)) = body.get_mut("rawEvent") {
        raw.remove("timestamp");
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_bodies_carry_the_event_without_its_time_twice() {
        let mut event = Event::new("inv").author("agent");
        event.set_time(agentstate::Timestamp::from_micros(1_800_000_000_123_456));
        let body = append_body(&event, &Map::new());
        assert_eq!(body["timestamp"], "2027-01-15T08:00:00.123456Z");
        assert!(body["rawEvent"].get("timestamp").is_none());
        let broken = serde_json::json!({"name": "x/sessions/s", "userId": "u", "updateTime": "soon"});
        assert!(session(&broken, "app", Vec::new()).unwrap_err().to_string().contains("updateTime"));
    }
}
