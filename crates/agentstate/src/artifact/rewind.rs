//! A rewind's artifacts, as ADK for Python's `Runner.rewind_async` restores them: the versions
//! the session's events recorded (`artifact_delta`) before the rewind point against those they
//! record now; every session-scoped artifact whose version differs gets a new version holding
//! what it held then, or the tombstone (which loads as none) when it had none then; `user:`
//! artifacts are not rewound.

use serde_json::{Map, Value};

use super::model;
use crate::error::Result;
use crate::event::Event;
use crate::key::SessionKey;
use crate::store::{ArtifactKey, ArtifactMeta, ArtifactStore, EventCursor, NewArtifactVersion};

/// Where a rewind goes back to.
#[derive(Debug, Clone)]
pub(crate) enum Point {
    /// Before this event (the first of an invocation).
    Before(EventCursor),
    /// After this event.
    After(EventCursor),
}

/// The versions a session's events record, before a rewind point and now.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    then: Map<String, Value>,
    now: Map<String, Value>,
}

impl Recorded {
    /// The version the events before the point last record for `name`.
    pub(crate) fn then(&self, name: &str) -> Option<i64> {
        self.then.get(name).and_then(Value::as_i64)
    }

    /// Takes in the next event of the history (oldest first).
    pub(crate) fn add(&mut self, event: &Event, point: &Point) {
        if event.actions.artifact_delta.is_empty() {
            return;
        }
        let at = EventCursor::of(event);
        let before = match point {
            Point::Before(cursor) => at < *cursor,
            Point::After(cursor) => at <= *cursor,
        };
        for (name, version) in &event.actions.artifact_delta {
            if before {
                self.then.insert(name.clone(), version.clone());
            }
            self.now.insert(name.clone(), version.clone());
        }
    }
}

/// Restores the session's artifacts to what `recorded` says they were then, saving a version of
/// each that differs now (its version then, or the tombstone); the rewind event's
/// `artifact_delta` (name → the new version).
pub(crate) async fn restore(
    store: &dyn ArtifactStore,
    session: &SessionKey,
    recorded: Recorded,
    now_micros: i64,
) -> Result<Map<String, Value>> {
    let mut delta = Map::new();
    for (name, now) in recorded.now {
        let then = recorded.then.get(&name).and_then(Value::as_i64);
        if model::is_user_scoped(&name) || then == now.as_i64() {
            continue;
        }
        let key = ArtifactKey::in_session(session, name);
        let restored = match then {
            Some(version) => store.get_artifact(&key, Some(version)).await?,
            None => None,
        };
        let version = match restored {
            Some(stored) => {
                let mut version = NewArtifactVersion::from(stored);
                version.meta.create_micros = now_micros;
                version
            }
            None => {
                let split = model::split(&model::tombstone())?;
                NewArtifactVersion {
                    meta: ArtifactMeta {
                        version: 0,
                        mime_type: split.mime_type,
                        custom_metadata: Map::new(),
                        create_micros: now_micros,
                        size: 0,
                    },
                    part: split.rest,
                    kind: split.kind,
                    data: split.data,
                }
            }
        };
        let number = store.put_artifact(&key, &version).await?;
        delta.insert(key.name, Value::from(number));
    }
    Ok(delta)
}
