//! For a backend's own tests of what it keeps for the compacted view (the facts of each event,
//! written at append time): a summarised session, and its view checked against the view computed
//! over the whole history.

use agentstate::compaction::{COMPACTION_KEY, Facts, view};
use agentstate::{Content, CreateSession, Event, GetSessionConfig, Session, SessionKey, SessionService};
use serde_json::json;

/// A session made by `request`, of 12 user turns (invocations `inv-0` … `inv-11`) and a summary
/// of the first 8.
pub async fn summarised_session(svc: &SessionService, request: CreateSession) -> Session {
    let mut s = svc.create_session(request).await.unwrap();
    for n in 0..12 {
        let event = Event::new(format!("inv-{n}")).author("user").content(Content::text("user", format!("q{n}")));
        svc.append_event(&mut s, event).await.unwrap();
    }
    let times: Vec<f64> = s.events().iter().map(|e| e.timestamp).collect();
    let mut summary = Event::new("summary").author("user");
    summary.actions.extra.insert(
        COMPACTION_KEY.into(),
        json!({"start_timestamp": times[0], "end_timestamp": times[7],
               "compacted_content": {"role": "model", "parts": [{"text": "s"}]}}),
    );
    svc.append_event(&mut s, summary).await.unwrap();
    s
}

/// The ids of the events the compacted view (overlap 1) of `key` answers; panics unless they are
/// those of the view computed over the whole history, and fewer.
pub async fn compacted_ids(svc: &SessionService, key: &SessionKey) -> Vec<String> {
    let loaded = svc.get_session(key, GetSessionConfig::compacted(1)).await.unwrap().unwrap();
    let ids: Vec<String> = loaded.events().iter().map(|e| e.id.clone()).collect();
    let whole = svc.get_session(key, GetSessionConfig::default()).await.unwrap().unwrap();
    let facts: Vec<Facts> = whole.events().iter().map(Facts::of).collect();
    let filtered: Vec<String> = view(&facts, 1).into_iter().map(|i| whole.events()[i].id.clone()).collect();
    assert_eq!(ids, filtered, "the store's view is the view of the whole history");
    assert!(ids.len() < whole.events().len(), "{ids:?}");
    ids
}
