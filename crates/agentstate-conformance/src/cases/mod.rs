//! The cases, by topic. Each takes a fresh service and panics on a contract violation.
//!
//! The case functions are private: the table in [`session_store_tests!`](crate::session_store_tests)
//! is their only user, through [`ALL`]. A case missing from the table is dead code, which the
//! workspace's lints refuse.

mod append;
mod artifact;
mod compaction;

pub use compaction::check_store_answers_views;
mod concurrency;
mod create;
mod delete;
mod deletion;
mod erasure;
mod expiry;
mod get;
mod history;
mod lease;
mod list;
mod list_order;
mod memory;
mod memory_bank;
mod memory_lifecycle;
mod memory_semantic;
mod retention;
mod scopes;
mod time;

use append::*;
use artifact::*;
use compaction::*;
use concurrency::*;
use create::*;
use delete::*;
use deletion::*;
use erasure::*;
use expiry::*;
use get::*;
use history::*;
use lease::*;
use list::*;
use list_order::*;
use memory::*;
use memory_bank::*;
use memory_lifecycle::*;
use memory_semantic::*;
use retention::*;
use scopes::*;
use time::*;

use std::future::Future;
use std::pin::Pin;

use agentstate::{CreateSession, Event, GetSessionConfig, Map, Session, SessionKey, Value};

/// The service under test, with its clock.
pub(crate) type Svc = crate::Harness;

/// A case: runs against a fresh service, panics on a contract violation.
pub(crate) type CaseFn = fn(Svc) -> Pin<Box<dyn Future<Output = ()>>>;

crate::session_store_tests!(@registry);

/// The case called `name`.
pub(crate) fn named(name: &str) -> CaseFn {
    match ALL.iter().find(|(n, ..)| *n == name) {
        Some((.., case)) => *case,
        None => panic!("no conformance case is called {name}"),
    }
}

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
