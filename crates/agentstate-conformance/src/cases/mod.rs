//! The cases, by topic. Each takes a fresh service and panics on a contract violation.

mod append;
mod concurrency;
mod create;
mod delete;
mod get;
mod list;
mod scopes;

pub use append::*;
pub use concurrency::*;
pub use create::*;
pub use delete::*;
pub use get::*;
pub use list::*;
pub use scopes::*;

use std::sync::Arc;

use agentstate::{CreateSession, Event, GetSessionConfig, Map, Session, SessionKey, SessionService, Value};

/// The service under test.
pub type Svc = Arc<dyn SessionService>;

pub(crate) fn obj(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("expected a JSON object, got {other}"),
    }
}

pub(crate) fn key(app: &str, user: &str, id: &str) -> SessionKey {
    SessionKey::new(app, user, id).unwrap()
}

pub(crate) async fn create(svc: &Svc, app: &str, user: &str, id: &str, state: Value) -> Session {
    svc.create_session(CreateSession::new(app, user).id(id).with_state(obj(state))).await.unwrap()
}

pub(crate) async fn load(svc: &Svc, session: &Session) -> Session {
    reload(svc, session.key()).await
}

pub(crate) async fn reload(svc: &Svc, key: &SessionKey) -> Session {
    svc.get_session(key, GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("session {key} should exist"))
}

/// The state of a session as a JSON object, for comparisons by value.
pub(crate) fn state_of(session: &Session) -> Value {
    Value::Object(session.state().all().clone())
}

pub(crate) fn ids(session: &Session) -> Vec<String> {
    session.events().iter().map(|e| e.id.clone()).collect()
}

pub(crate) fn event(invocation: &str, delta: Value) -> Event {
    let mut e = Event::new(invocation).author("agent");
    e.actions.state_delta = obj(delta);
    e
}
