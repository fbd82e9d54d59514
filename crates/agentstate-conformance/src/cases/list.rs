use std::collections::BTreeSet;

use agentstate::{ErrorKind, ListSessions, Session};
use serde_json::json;

use super::{Svc, create, event, state_of};
use crate::unique;

fn order(sessions: &[Session]) -> Vec<(String, String)> {
    sessions.iter().map(|s| (s.user_id().to_owned(), s.id().to_owned())).collect()
}

/// Lists carry merged state (each session with its own user's keys) and no events, ordered by
/// (last update time, user id, session id); `user_id: None` lists every user of the app.
pub(super) async fn list_orders_merges_and_omits_events(svc: Svc) {
    let app = unique("app");
    let mut first = create(&svc, &app, "u2", "first", json!({"k": 1, "user:name": "two"})).await;
    create(&svc, &app, "u1", "second", json!({"user:name": "one", "app:v": 1})).await;
    create(&svc, &app, "u2", "third", json!({})).await;
    // An append moves `first` to the end.
    svc.append_event(&mut first, event("inv", json!({"k": 2}))).await.unwrap();

    let all = svc.list_sessions(ListSessions::app(&app)).await.unwrap();
    assert_eq!(all.next_page_token, None);
    assert_eq!(
        order(&all.sessions),
        [("u1".into(), "second".into()), ("u2".into(), "third".into()), ("u2".into(), "first".into())]
    );
    let times: Vec<f64> = all.sessions.iter().map(Session::last_update_time).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(all.sessions.iter().all(|s| s.events().is_empty()), "lists carry no events");
    assert_eq!(state_of(&all.sessions[0]), json!({"app:v": 1, "user:name": "one"}));
    assert_eq!(state_of(&all.sessions[2]), json!({"k": 2, "app:v": 1, "user:name": "two"}));

    let u2 = svc.list_sessions(ListSessions::user(&app, "u2")).await.unwrap();
    assert_eq!(order(&u2.sessions), [("u2".into(), "third".into()), ("u2".into(), "first".into())]);
}

/// An unknown app or user lists nothing.
pub(super) async fn list_unknown_app_or_user_is_empty(svc: Svc) {
    let app = unique("app");
    create(&svc, &app, "u", "s", json!({})).await;
    assert!(svc.list_sessions(ListSessions::app(unique("app"))).await.unwrap().sessions.is_empty());
    assert!(svc.list_sessions(ListSessions::user(&app, "nobody")).await.unwrap().sessions.is_empty());
}

/// Following `next_page_token` visits every session exactly once, in order; bad tokens and a
/// zero page size are refused.
pub(super) async fn list_pages_cover_every_session_once(svc: Svc) {
    let app = unique("app");
    for i in 0..10 {
        create(&svc, &app, if i % 2 == 0 { "ua" } else { "ub" }, &format!("s{i:02}"), json!({})).await;
    }
    let everything = order(&svc.list_sessions(ListSessions::app(&app)).await.unwrap().sessions);
    assert_eq!(everything.len(), 10);

    let mut seen = Vec::new();
    let mut request = ListSessions::app(&app).page_size(3);
    let mut pages = 0;
    loop {
        let page = svc.list_sessions(request.clone()).await.unwrap();
        pages += 1;
        assert!(page.sessions.len() <= 3);
        seen.extend(order(&page.sessions));
        match page.next_page_token {
            Some(token) => request = request.page_token(token),
            None => break,
        }
        assert!(pages < 10, "pagination does not terminate");
    }
    assert_eq!(seen, everything);
    assert_eq!(pages, 4, "10 sessions in pages of 3");
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 10);

    let exact = svc.list_sessions(ListSessions::user(&app, "ua").page_size(5)).await.unwrap();
    assert_eq!(exact.sessions.len(), 5);
    assert_eq!(exact.next_page_token, None, "no empty trailing page");

    let err = svc.list_sessions(ListSessions::app(&app).page_token("not-a-token")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = svc.list_sessions(ListSessions::app(&app).page_size(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

/// Newest first is the order reversed, in pages that visit every session once; a token keeps
/// its order; `offset` skips and `count` counts every page, of an app or of one user.
pub(super) async fn list_newest_first_offsets_and_counts(svc: Svc) {
    let app = unique("app");
    let mut sessions = Vec::new();
    for i in 0..7 {
        sessions.push(create(&svc, &app, if i % 3 == 0 { "ua" } else { "ub" }, &format!("s{i}"), json!({})).await);
    }
    // An append moves s1 to the newest end.
    svc.append_event(&mut sessions[1], event("inv", json!({"k": 1}))).await.unwrap();
    let oldest_first = order(&svc.list_sessions(ListSessions::app(&app)).await.unwrap().sessions);
    let mut expected = oldest_first.clone();
    expected.reverse();
    assert_eq!(expected[0], ("ub".into(), "s1".into()));

    let all = svc.list_sessions(ListSessions::app(&app).newest_first()).await.unwrap();
    assert_eq!(order(&all.sessions), expected);
    let times: Vec<f64> = all.sessions.iter().map(Session::last_update_time).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    let mut seen = Vec::new();
    let mut request = ListSessions::app(&app).newest_first().page_size(3).count();
    loop {
        let page = svc.list_sessions(request.clone()).await.unwrap();
        assert_eq!(page.total_size, Some(7));
        seen.extend(order(&page.sessions));
        match page.next_page_token {
            Some(token) => {
                let asc = svc.list_sessions(ListSessions::app(&app).page_token(&token)).await.unwrap_err();
                assert_eq!(asc.kind(), ErrorKind::InvalidArgument, "a newest-first token in an oldest-first list");
                request = request.page_token(token);
            }
            None => break,
        }
        assert!(seen.len() <= 7, "pagination does not terminate");
    }
    assert_eq!(seen, expected);

    let user: Vec<_> = expected.iter().filter(|(u, _)| u == "ub").cloned().collect();
    let page = svc.list_sessions(ListSessions::user(&app, "ub").newest_first().offset(1).page_size(2).count()).await;
    let page = page.unwrap();
    assert_eq!(order(&page.sessions), user[1..3]);
    assert_eq!(page.total_size, Some(user.len()));
    assert!(page.next_page_token.is_some());
    let rest = svc.list_sessions(ListSessions::app(&app).offset(5)).await.unwrap();
    assert_eq!(order(&rest.sessions), oldest_first[5..]);
    assert_eq!(rest.total_size, None, "counted only when asked");
    let past_the_end = svc.list_sessions(ListSessions::app(&app).offset(7).count()).await.unwrap();
    assert_eq!(
        (past_the_end.sessions.len(), past_the_end.total_size, past_the_end.next_page_token),
        (0, Some(7), None)
    );
    let nobody = svc.list_sessions(ListSessions::user(&app, "nobody").count()).await.unwrap();
    assert_eq!(nobody.total_size, Some(0));
}

pub(crate) async fn apps_users_and_event_counts_are_listed(svc: Svc) {
    let app = crate::unique("apps");
    for (user, events) in [("b", 3), ("a", 0)] {
        let mut session = svc.create_session(agentstate::CreateSession::new(&app, user).id("s")).await.unwrap();
        for _ in 0..events {
            svc.append_event(&mut session, super::event("inv", serde_json::json!({"k": 1}))).await.unwrap();
        }
        assert_eq!(svc.count_events(session.key()).await.unwrap(), Some(events));
    }
    assert!(svc.list_apps().await.unwrap().contains(&app));
    assert_eq!(svc.list_users(&app).await.unwrap(), ["a", "b"], "sorted");
    assert_eq!(svc.count_events(&super::key(&app, "a", "missing")).await.unwrap(), None);
}
