//! Model-based property test: random operation sequences run against a service and against a
//! deliberately naive model of the contract (plain maps, linear scans); every observable result
//! must agree. The model adopts only what it cannot predict: a new session's creation time.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use agentstate::clock::ManualClock;
use agentstate::store::SessionStore;
use agentstate::{
    ConflictKind, CreateSession, Error, Event, GetSessionConfig, ListSessions, Map, Session, SessionKey, Value,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::{Capability, Harness, Stack};

mod history;
mod ops;

use ops::{IdChoice, NAMES, Op, SCOPES, SIDS, SLOTS, USERS, ops};
use serde_json::json;

/// Runs `cases` random operation sequences against services made by `factory` and the model.
/// Panics with the shrunk failing sequence on the first disagreement.
pub fn check_against_model<F, FF>(factory: F, stack: Stack, cases: u32)
where
    F: Fn(ManualClock) -> FF,
    FF: Future<Output = Arc<dyn SessionStore>>,
{
    check_against_model_lacking(factory, stack, cases, &[]);
}

/// [`check_against_model`] for a backend that lacks some [`Capability`]: the operations keep to
/// what it can do (without [`Capability::SessionIdsPerUser`], no two users share a session id;
/// without [`Capability::History`], no history question, rewind or fork).
pub fn check_against_model_lacking<F, FF>(factory: F, stack: Stack, cases: u32, lacks: &[Capability])
where
    F: Fn(ManualClock) -> FF,
    FF: Future<Output = Arc<dyn SessionStore>>,
{
    let ids_per_app = lacks.contains(&Capability::SessionIdsPerUser);
    let history = !lacks.contains(&Capability::History);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&ops(), |ops| {
        runtime.block_on(async {
            let svc = Harness::new(&factory, stack).await;
            let app = crate::unique("model");
            Run { svc, app, model: Model::default(), slots: Default::default(), next_id: 0, ids_per_app, history }
                .execute(&ops)
                .await
        })
    });
    if let Err(err) = result {
        panic!("service disagrees with the model: {err}");
    }
}

#[derive(Debug, Default)]
struct Model {
    app: Map<String, Value>,
    users: BTreeMap<usize, Map<String, Value>>,
    sessions: BTreeMap<(usize, usize), Stored>,
}

#[derive(Debug, Clone)]
struct Stored {
    /// The state the session was created with (flat, no `temp:` keys): its history's start.
    created: Map<String, Value>,
    state: Map<String, Value>,
    events: Vec<Event>,
    last: i64,
}

#[derive(Debug, Clone, PartialEq)]
struct Handle {
    user: usize,
    sid: usize,
    state: Map<String, Value>,
    events: Vec<String>,
    last: i64,
}

impl Model {
    fn merged(&self, user: usize, stored: &Stored) -> Map<String, Value> {
        let mut m = stored.state.clone();
        for (k, v) in &self.app {
            m.insert(format!("app:{k}"), v.clone());
        }
        for (k, v) in self.users.get(&user).into_iter().flatten() {
            m.insert(format!("user:{k}"), v.clone());
        }
        m
    }

    fn apply(&mut self, user: usize, sid: usize, delta: &Map<String, Value>) {
        self.apply_with_deletions(user, sid, delta, &[]);
    }

    /// Sets the keys of `delta`, then removes `deleted`, each in its scope.
    fn apply_with_deletions(&mut self, user: usize, sid: usize, delta: &Map<String, Value>, deleted: &[String]) {
        let changes = delta.iter().map(|(k, v)| (k, Some(v))).chain(deleted.iter().map(|k| (k, None)));
        for (k, v) in changes {
            let (map, key) = if let Some(rest) = k.strip_prefix("app:") {
                (&mut self.app, rest)
            } else if let Some(rest) = k.strip_prefix("user:") {
                (self.users.entry(user).or_default(), rest)
            } else if !k.starts_with("temp:") {
                (&mut self.sessions.get_mut(&(user, sid)).expect("session exists").state, k.as_str())
            } else {
                continue;
            };
            match v {
                Some(v) => map.insert(key.to_owned(), v.clone()),
                None => map.shift_remove(key),
            };
        }
    }
}

/// An event as the service stores it, id and time aside: each deleted key once and `null` in
/// the delta, `temp:` keys dropped.
fn normalized(sent: &Event) -> Event {
    let mut e = sent.clone();
    let mut deleted: Vec<String> = Vec::new();
    for k in std::mem::take(&mut e.deleted_keys) {
        if !deleted.contains(&k) {
            e.actions.state_delta.insert(k.clone(), Value::Null);
            deleted.push(k);
        }
    }
    e.deleted_keys = deleted.into_iter().filter(|k| !k.starts_with("temp:")).collect();
    e.actions.state_delta.retain(|k, _| !k.starts_with("temp:"));
    e
}

fn flat(entries: &[(usize, usize, Option<i64>)]) -> Map<String, Value> {
    entries
        .iter()
        .map(|&(scope, name, v)| (format!("{}{}", SCOPES[scope], NAMES[name]), v.map_or(Value::Null, Value::from)))
        .collect()
}

fn outcome<T>(r: &Result<T, Error>) -> String {
    match r {
        Ok(_) => "Ok".into(),
        Err(e) => format!("Err({:?})", e.kind()),
    }
}

struct Run {
    svc: Harness,
    app: String,
    model: Model,
    slots: [Option<(Session, Handle)>; SLOTS],
    next_id: u64,
    /// Session ids are per app: the id of `(user, sid)` names the user too.
    ids_per_app: bool,
    /// The store answers history questions.
    history: bool,
}

impl Run {
    fn session_id(&self, user: usize, sid: usize) -> String {
        if self.ids_per_app { format!("{}-{}", SIDS[sid], USERS[user]) } else { SIDS[sid].to_owned() }
    }

    fn key(&self, user: usize, sid: usize) -> SessionKey {
        SessionKey::new(&self.app, USERS[user], self.session_id(user, sid)).unwrap()
    }

    async fn execute(mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for (step, op) in ops.iter().enumerate() {
            self.step(op).await.map_err(|e| TestCaseError::fail(format!("step {step} {op:?}: {e}")))?;
        }
        // Finally every session must be stored exactly as the model says.
        for user in 0..USERS.len() {
            for sid in 0..SIDS.len() {
                self.compare_get(user, sid, GetSessionConfig::default()).await?;
            }
        }
        Ok(())
    }

    async fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Create { user, sid, ref state } => self.create(user, sid, flat(state)).await,
            Op::Load { slot, user, sid } => {
                let got = self.svc.get_session(&self.key(user, sid), GetSessionConfig::default()).await.unwrap();
                let expected = self.model.sessions.get(&(user, sid)).map(|s| Handle {
                    user,
                    sid,
                    state: self.model.merged(user, s),
                    events: s.events.iter().map(|e| e.id.clone()).collect(),
                    last: s.last,
                });
                prop_assert_eq!(&got.as_ref().map(|s| handle_of(user, sid, s)), &expected);
                self.slots[slot] = got.zip(expected);
                Ok(())
            }
            Op::Get { user, sid, recent, after_nth_newest } => {
                let after = after_nth_newest.and_then(|n| {
                    let events = &self.model.sessions.get(&(user, sid))?.events;
                    let e = events.iter().rev().nth(n)?;
                    Some(e.time())
                });
                self.compare_get(
                    user,
                    sid,
                    GetSessionConfig {
                        num_recent_events: recent,
                        after_timestamp: after,
                        ..GetSessionConfig::default()
                    },
                )
                .await
            }
            Op::Append { slot, ref delta, ref deleted, offset_micros, partial, id } => {
                let deleted =
                    deleted.iter().map(|&(scope, name)| format!("{}{}", SCOPES[scope], NAMES[name])).collect();
                self.append(slot, flat(delta), deleted, offset_micros, partial, id).await
            }
            Op::Delete { user, sid } => {
                self.svc.delete_session(&self.key(user, sid)).await.unwrap();
                self.model.sessions.remove(&(user, sid));
                Ok(())
            }
            Op::List { user, page_size } => self.list(user, page_size).await,
            Op::Race { user, sid, ref delta_a, ref delta_b } => {
                self.race(user, sid, flat(delta_a), flat(delta_b)).await
            }
            Op::History { .. } | Op::Rewind { .. } | Op::Fork { .. } if !self.history => Ok(()),
            Op::History { user, sid, nth } => {
                // Mostly a session with history, when there is one.
                let with_events: Vec<(usize, usize)> =
                    self.model.sessions.iter().filter(|(_, s)| !s.events.is_empty()).map(|(k, _)| *k).collect();
                let (user, sid) = match with_events.get(user * SIDS.len() + sid) {
                    Some(&chosen) if nth % 4 != 0 => chosen,
                    _ => with_events.first().copied().filter(|_| nth % 4 != 0).unwrap_or((user, sid)),
                };
                self.history(user, sid, nth).await
            }
            Op::Rewind { slot, nth } => self.rewind(slot, nth).await,
            Op::Fork { user, sid, nth, to_sid } => self.fork(user, sid, nth, to_sid).await,
        }
    }

    /// Two handles of one session, loaded together, append at once: exactly one wins, the other
    /// is refused as stale and left unchanged; the model then follows the winner.
    async fn race(
        &mut self,
        user: usize,
        sid: usize,
        delta_a: Map<String, Value>,
        delta_b: Map<String, Value>,
    ) -> Result<(), TestCaseError> {
        if !self.model.sessions.contains_key(&(user, sid)) {
            return Ok(());
        }
        let key = self.key(user, sid);
        let load = || self.svc.get_session(&key, GetSessionConfig::recent(0));
        let (mut sa, mut sb) = match tokio::join!(load(), load()) {
            (Ok(Some(a)), Ok(Some(b))) => (a, b),
            other => return Err(TestCaseError::fail(format!("loading the racers failed: {other:?}"))),
        };
        let mut event = |delta: Map<String, Value>| {
            let mut e = Event::new("race").author("model");
            e.actions.state_delta = delta;
            e.id = format!("e{}", self.next_id);
            self.next_id += 1;
            e
        };
        let (ea, eb) = (event(delta_a), event(delta_b));
        let (before_a, before_b) = (sa.clone(), sb.clone());
        let (ra, rb) =
            tokio::join!(self.svc.append_event(&mut sa, ea.clone()), self.svc.append_event(&mut sb, eb.clone()));
        let stale = |r: &Result<Event, Error>| matches!(r, Err(Error::Conflict { kind: ConflictKind::StaleSession }));
        let (returned, sent, winner, loser_before, loser_after) = match (&ra, &rb) {
            (Ok(w), r) if stale(r) => (w.clone(), ea, &sa, before_b, &sb),
            (r, Ok(w)) if stale(r) => (w.clone(), eb, &sb, before_a, &sa),
            _ => {
                return Err(TestCaseError::fail(format!(
                    "a race must have one winner and one stale loser: {ra:?} / {rb:?}"
                )));
            }
        };
        prop_assert_eq!(loser_after, &loser_before, "the loser's handle is unchanged");
        let stored = self.model.sessions.get_mut(&(user, sid)).expect("present");
        let ts = micros(sent.timestamp).max(stored.last + 1);
        let mut expected = sent.clone();
        expected.actions.state_delta.retain(|k, _| !k.starts_with("temp:"));
        expected.timestamp = ts as f64 / 1e6;
        prop_assert_eq!(&returned, &expected);
        prop_assert_eq!(winner.last_update_micros(), ts);
        stored.events.push(expected);
        stored.last = ts;
        self.model.apply(user, sid, &sent.actions.state_delta);
        Ok(())
    }

    async fn create(&mut self, user: usize, sid: usize, state: Map<String, Value>) -> Result<(), TestCaseError> {
        let request =
            CreateSession::new(&self.app, USERS[user]).id(self.session_id(user, sid)).with_state(state.clone());
        let got = self.svc.create_session(request).await;
        if self.model.sessions.contains_key(&(user, sid)) {
            prop_assert_eq!(outcome(&got), "Err(AlreadyExists)");
            return Ok(());
        }
        let session = got.map_err(|e| TestCaseError::fail(format!("create failed: {e}")))?;
        let mut created = state.clone();
        created.retain(|k, _| !k.starts_with("temp:"));
        let stored = Stored { created, state: Map::new(), events: Vec::new(), last: session.last_update_micros() };
        self.model.sessions.insert((user, sid), stored);
        self.model.apply(user, sid, &state);
        let expected = self.model.merged(user, &self.model.sessions[&(user, sid)]);
        prop_assert_eq!(session.state().all(), &expected);
        prop_assert!(session.events().is_empty());
        Ok(())
    }

    async fn compare_get(&self, user: usize, sid: usize, config: GetSessionConfig) -> Result<(), TestCaseError> {
        let got = self.svc.get_session(&self.key(user, sid), config).await.unwrap();
        let Some(stored) = self.model.sessions.get(&(user, sid)) else {
            prop_assert!(got.is_none(), "deleted or never created, yet found");
            return Ok(());
        };
        let got = got.ok_or_else(|| TestCaseError::fail("session missing"))?;
        let mut window: Vec<&Event> =
            stored.events.iter().filter(|e| config.after_timestamp.is_none_or(|after| e.time() >= after)).collect();
        if let Some(n) = config.num_recent_events {
            window = window.split_off(window.len().saturating_sub(n));
        }
        let expected: Vec<Value> = window.iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        let actual: Vec<Value> = got.events().iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        prop_assert_eq!(actual, expected);
        prop_assert_eq!(got.state().all(), &self.model.merged(user, stored));
        prop_assert_eq!(got.last_update_micros(), stored.last);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn append(
        &mut self,
        slot: usize,
        delta: Map<String, Value>,
        deleted: Vec<String>,
        offset: i64,
        partial: bool,
        choice: IdChoice,
    ) -> Result<(), TestCaseError> {
        let Some((mut session, mut handle)) = self.slots[slot].take() else { return Ok(()) };
        let (user, sid) = (handle.user, handle.sid);
        let stored = self.model.sessions.get(&(user, sid)).cloned();
        let last_stored = stored.as_ref().and_then(|s| s.events.last().cloned());
        let mut event = Event::new(format!("i{}", self.next_id % 4)).author("model");
        event.actions.state_delta = delta;
        event.deleted_keys = deleted;
        event.timestamp = (handle.last + offset) as f64 / 1e6;
        event.partial = partial.then_some(true);
        event.id = match (choice, &last_stored) {
            (IdChoice::Empty, _) => String::new(),
            (IdChoice::RetryLast, Some(last)) => {
                event = last.clone();
                last.id.clone()
            }
            (IdChoice::ReuseWithOtherContent, Some(last)) => {
                event.actions.state_delta.insert("different".into(), json!(self.next_id));
                last.id.clone()
            }
            _ => format!("e{}", self.next_id),
        };
        self.next_id += 1;
        let sent = event.clone();
        let got = self.svc.append_event(&mut session, event).await;

        if sent.is_partial() {
            prop_assert_eq!(got.map_err(|e| TestCaseError::fail(e.to_string()))?, sent);
        } else if let Some(stored) = stored {
            if let Some(existing) = stored.events.iter().find(|e| e.id == sent.id) {
                if existing.same_as_retry(&normalized(&sent)) {
                    prop_assert_eq!(got.map_err(|e| TestCaseError::fail(e.to_string()))?, existing.clone());
                } else {
                    let is_dup = matches!(&got, Err(Error::Conflict { kind: ConflictKind::DuplicateEventId { .. } }));
                    prop_assert!(is_dup, "expected a duplicate-id conflict, got {:?}", got);
                }
            } else if stored.last != handle.last {
                let is_stale = matches!(&got, Err(Error::Conflict { kind: ConflictKind::StaleSession }));
                prop_assert!(is_stale, "expected a stale conflict, got {:?}", got);
            } else {
                let returned = got.map_err(|e| TestCaseError::fail(format!("append failed: {e}")))?;
                let ts = micros(sent.timestamp).max(handle.last + 1);
                let mut expected = normalized(&sent);
                expected.timestamp = ts as f64 / 1e6;
                if sent.id.is_empty() {
                    prop_assert!(!returned.id.is_empty());
                    expected.id = returned.id.clone();
                }
                prop_assert_eq!(&returned, &expected);
                let model_session = self.model.sessions.get_mut(&(user, sid)).expect("present");
                model_session.events.push(expected.clone());
                model_session.last = ts;
                self.model.apply_with_deletions(user, sid, &expected.actions.state_delta, &expected.deleted_keys);
                // The handle: the invocation's temp: changes, then the stored ones.
                let temp_deleted: Vec<&String> = sent.deleted_keys.iter().filter(|k| k.starts_with("temp:")).collect();
                for (k, v) in sent.actions.state_delta.iter().filter(|(k, _)| k.starts_with("temp:")) {
                    handle.state.insert(k.clone(), v.clone());
                }
                for k in temp_deleted {
                    handle.state.shift_remove(k);
                }
                for (k, v) in &expected.actions.state_delta {
                    handle.state.insert(k.clone(), v.clone());
                }
                for k in &expected.deleted_keys {
                    handle.state.shift_remove(k);
                }
                handle.events.push(expected.id);
                handle.last = ts;
            }
        } else {
            prop_assert_eq!(outcome(&got), "Err(NotFound)");
        }
        prop_assert_eq!(handle_of(user, sid, &session), handle.clone(), "handle after append");
        self.slots[slot] = Some((session, handle));
        Ok(())
    }

    async fn list(&self, user: Option<usize>, page_size: Option<usize>) -> Result<(), TestCaseError> {
        let mut request = ListSessions {
            app_name: self.app.clone(),
            user_id: user.map(|u| USERS[u].to_owned()),
            ..Default::default()
        };
        request.page_size = page_size;
        let mut got = Vec::new();
        loop {
            let page = self.svc.list_sessions(request.clone()).await.unwrap();
            got.extend(page.sessions.iter().map(|s| {
                prop_assert!(s.events().is_empty());
                Ok((s.last_update_micros(), s.user_id().to_owned(), s.id().to_owned(), s.state().all().clone()))
            }));
            match page.next_page_token {
                Some(token) => request.page_token = Some(token),
                None => break,
            }
        }
        let got: Vec<_> = got.into_iter().collect::<Result<_, TestCaseError>>()?;
        let mut expected: Vec<_> = self
            .model
            .sessions
            .iter()
            .filter(|((u, _), _)| user.is_none_or(|x| x == *u))
            .map(|(&(u, s), stored)| {
                (stored.last, USERS[u].to_owned(), self.session_id(u, s), self.model.merged(u, stored))
            })
            .collect();
        expected.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));
        prop_assert_eq!(got, expected);
        Ok(())
    }
}

/// The history state: `created`, then each event's delta and deletions (no `temp:` keys).
fn fold(created: &Map<String, Value>, events: &[Event]) -> Map<String, Value> {
    let mut state = created.clone();
    for event in events {
        for (k, v) in event.actions.state_delta.iter().filter(|(k, _)| !k.starts_with("temp:")) {
            state.insert(k.clone(), v.clone());
        }
        for k in &event.deleted_keys {
            state.shift_remove(k);
        }
    }
    state
}

/// The session's own keys.
fn session_part(state: &Map<String, Value>) -> Map<String, Value> {
    state.iter().filter(|(k, _)| !k.contains(':')).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn micros(secs: f64) -> i64 {
    (secs * 1e6).round() as i64
}

fn handle_of(user: usize, sid: usize, s: &Session) -> Handle {
    Handle {
        user,
        sid,
        state: s.state().all().clone(),
        events: s.events().iter().map(|e| e.id.clone()).collect(),
        last: s.last_update_micros(),
    }
}
