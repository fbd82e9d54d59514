//! The history operations of the model test: state at and before each event, diffs, rewind
//! and fork, each checked against a fold of the model's events.

use agentstate::history::{ForkSession, HistoryAt};
use agentstate::{ConflictKind, Error, GetSessionConfig, Map, SessionKey, Value};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::{Run, Stored, fold, handle_of, micros, outcome, session_part};

impl Run {
    pub(super) async fn history(&self, user: usize, sid: usize, nth: usize) -> Result<(), TestCaseError> {
        let key = self.key(user, sid);
        let Some(stored) = self.model.sessions.get(&(user, sid)) else {
            let got = self.svc.state_at(&key, HistoryAt::Creation).await.unwrap();
            prop_assert!(got.is_none(), "history of a missing session");
            return Ok(());
        };
        if stored.events.is_empty() {
            let got = self.svc.state_at(&key, HistoryAt::Creation).await.unwrap().map(|s| s.state);
            prop_assert_eq!(got, Some(stored.created.clone()));
            return Ok(());
        }
        // Every event from the `nth` (mod the count) on: a few questions per session.
        for i in (nth % stored.events.len())..stored.events.len() {
            self.history_of_event(&key, stored, i).await?;
        }
        Ok(())
    }

    async fn history_of_event(&self, key: &SessionKey, stored: &Stored, i: usize) -> Result<(), TestCaseError> {
        let event = &stored.events[i];
        let (before, after) = (fold(&stored.created, &stored.events[..i]), fold(&stored.created, &stored.events[..=i]));
        let got = self.svc.state_at(key, HistoryAt::AfterEvent(event.id.clone())).await.unwrap().map(|s| s.state);
        prop_assert_eq!(got, Some(after.clone()), "after event {}", i);
        let got = self.svc.state_at(key, HistoryAt::BeforeEvent(event.id.clone())).await.unwrap().map(|s| s.state);
        prop_assert_eq!(got, Some(before.clone()), "before event {}", i);
        let diff = self.svc.event_diff(key, &event.id).await.unwrap().expect("present");
        let mut changed: Vec<(String, Option<Value>, Option<Value>)> =
            diff.changes.into_iter().map(|c| (c.key, c.before, c.after)).collect();
        changed.sort_by(|a, b| a.0.cmp(&b.0));
        let mut expected: Vec<(String, Option<Value>, Option<Value>)> = after
            .keys()
            .chain(before.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .map(|k| (k.clone(), before.get(k).cloned(), after.get(k).cloned()))
            .collect();
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        expected.dedup();
        prop_assert_eq!(changed, expected, "diff of event {}", i);
        Ok(())
    }

    pub(super) async fn rewind(&mut self, slot: usize, nth: usize) -> Result<(), TestCaseError> {
        let Some((mut session, mut handle)) = self.slots[slot].take() else { return Ok(()) };
        let (user, sid) = (handle.user, handle.sid);
        let Some(stored) = self.model.sessions.get(&(user, sid)).cloned() else {
            let got = self.svc.rewind(&mut session, "i0").await;
            prop_assert_eq!(outcome(&got), "Err(NotFound)");
            self.slots[slot] = Some((session, handle));
            return Ok(());
        };
        if stored.events.is_empty() {
            let got = self.svc.rewind(&mut session, "i0").await;
            prop_assert_eq!(outcome(&got), "Err(InvalidArgument)");
            self.slots[slot] = Some((session, handle));
            return Ok(());
        }
        let invocation = stored.events[nth % stored.events.len()].invocation_id.clone();
        let got = self.svc.rewind(&mut session, &invocation).await;
        if stored.last != handle.last {
            let stale = matches!(&got, Err(Error::Conflict { kind: ConflictKind::StaleSession }));
            prop_assert!(stale, "a rewind through a stale handle: {:?}", got);
        } else {
            let event = got.map_err(|e| TestCaseError::fail(format!("rewind failed: {e}")))?;
            let first = stored.events.iter().position(|e| e.invocation_id == invocation).unwrap_or(0);
            let then = session_part(&fold(&stored.created, &stored.events[..first]));
            let now = session_part(&handle.state);
            let mut delta: Map<String, Value> =
                then.iter().filter(|(k, v)| now.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect();
            let mut deleted: Vec<String> = now.keys().filter(|k| !then.contains_key(*k)).cloned().collect();
            for k in &deleted {
                delta.insert(k.clone(), Value::Null);
            }
            let mut got_deleted = event.deleted_keys.clone();
            got_deleted.sort();
            deleted.sort();
            prop_assert_eq!(got_deleted, deleted.clone());
            prop_assert_eq!(&event.actions.state_delta, &delta);
            prop_assert_eq!(event.actions.rewind_before_invocation_id.as_deref(), Some(invocation.as_str()));
            prop_assert!(event.author == "user" && event.invocation_id.starts_with("e-"));
            let ts = micros(event.timestamp);
            prop_assert!(ts > stored.last);
            let model_session = self.model.sessions.get_mut(&(user, sid)).expect("present");
            model_session.events.push(event.clone());
            model_session.last = ts;
            self.model.apply_with_deletions(user, sid, &delta, &deleted);
            for (k, v) in &delta {
                handle.state.insert(k.clone(), v.clone());
            }
            for k in &deleted {
                handle.state.shift_remove(k);
            }
            handle.events.push(event.id);
            handle.last = ts;
        }
        prop_assert_eq!(handle_of(user, sid, &session), handle.clone(), "handle after rewind");
        self.slots[slot] = Some((session, handle));
        Ok(())
    }

    pub(super) async fn fork(
        &mut self,
        user: usize,
        sid: usize,
        nth: usize,
        to_sid: usize,
    ) -> Result<(), TestCaseError> {
        let Some(source) = self.model.sessions.get(&(user, sid)).cloned() else { return Ok(()) };
        if source.events.is_empty() {
            return Ok(());
        }
        let i = nth % source.events.len();
        let request = ForkSession {
            source: self.key(user, sid),
            at_event_id: source.events[i].id.clone(),
            session_id: Some(self.session_id(user, to_sid)),
        };
        let got = self.svc.fork_session(request).await;
        if self.model.sessions.contains_key(&(user, to_sid)) {
            prop_assert_eq!(outcome(&got), "Err(AlreadyExists)");
            return Ok(());
        }
        got.map_err(|e| TestCaseError::fail(format!("fork failed: {e}")))?;
        let events = source.events[..=i].to_vec();
        let fork = Stored {
            created: source.created.clone(),
            state: session_part(&fold(&source.created, &events)),
            last: micros(events[i].timestamp),
            events,
        };
        self.model.sessions.insert((user, to_sid), fork);
        self.compare_get(user, to_sid, GetSessionConfig::default()).await
    }
}
