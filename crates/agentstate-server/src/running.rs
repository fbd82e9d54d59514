//! Long-running operations that do not finish while they are answered (Memory Bank's
//! generation from conversations): each is named when it starts, polled by `GET` on its name, and
//! kept after it ends so that a client polling late still reads how it ended. Only the most recent
//! [`KEPT`] are kept; they live in this process (a poll that reaches another server behind the
//! same database is answered done, with nothing).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// How many operations are remembered, the oldest forgotten first.
const KEPT: usize = 10_000;

/// The operations of this process, by name.
#[derive(Debug, Default)]
pub(crate) struct Running(Mutex<Operations>);

#[derive(Debug, Default)]
struct Operations {
    by_name: HashMap<String, Operation>,
    order: VecDeque<String>,
}

/// An operation: whose it is, and how it ended.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    /// The app (engine) it works on.
    pub(crate) app: String,
    /// The user whose scope it writes, if the scope names one (else every user's token).
    pub(crate) user: Option<String>,
    /// `None` while running, then the done operation's JSON.
    pub(crate) done: Option<Value>,
}

impl Running {
    /// Marks `name` as running, on `app` for `user`.
    pub(crate) fn start(&self, name: &str, app: &str, user: Option<&str>) {
        let mut operations = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        while operations.order.len() >= KEPT {
            if let Some(oldest) = operations.order.pop_front() {
                operations.by_name.remove(&oldest);
            }
        }
        let operation = Operation { app: app.to_owned(), user: user.map(str::to_owned), done: None };
        operations.by_name.insert(name.to_owned(), operation);
        operations.order.push_back(name.to_owned());
    }

    /// Records how `name` ended: the done operation's JSON.
    pub(crate) fn finish(&self, name: &str, done: Value) {
        let mut operations = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(operation) = operations.by_name.get_mut(name) {
            operation.done = Some(done);
        }
    }

    /// The operation `name`, if this process knows it.
    pub(crate) fn get(&self, name: &str) -> Option<Operation> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).by_name.get(name).cloned()
    }
}
