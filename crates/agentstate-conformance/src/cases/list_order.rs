//! Lists by creation, filtered lists, and pages that stay put while sessions are written.

use std::collections::BTreeSet;
use std::time::Duration;

use agentstate::filter::parse_session_filter;
use agentstate::store::{ListOrder, SessionFilter, TimeRange};
use agentstate::{CreateSession, ErrorKind, Event, ListSessions, Session};
use serde_json::json;

use super::{Svc, event, obj};
use crate::unique;

fn ids(sessions: &[Session]) -> Vec<String> {
    sessions.iter().map(|s| s.id().to_owned()).collect()
}

/// Every page of `request`, in order, as the ids listed; panics past `most` pages.
async fn all_pages(svc: &Svc, mut request: ListSessions, most: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..most {
        let page = svc.list_sessions(request.clone()).await.unwrap();
        seen.extend(ids(&page.sessions));
        match page.next_page_token {
            Some(token) => request = request.page_token(token),
            None => return seen,
        }
    }
    panic!("pagination does not end within {most} pages");
}

/// An event at the service's time now, which then moves on a millisecond: appends land in
/// the order made, after every creation.
fn event_now(svc: &Svc, delta: serde_json::Value) -> Event {
    let mut e = event("inv", delta);
    e.timestamp = svc.now_secs();
    svc.clock().advance(Duration::from_millis(1));
    e
}

/// Sessions `s00`.. of user `u` (odd ones of `v`), a millisecond apart on the service's clock.
async fn created_in_order(svc: &Svc, app: &str, count: usize) -> Vec<Session> {
    let mut sessions = Vec::new();
    for i in 0..count {
        let user = if i % 2 == 0 { "u" } else { "v" };
        let request = CreateSession::new(app, user).id(format!("s{i:02}")).with_state(obj(json!({"n": i})));
        sessions.push(svc.create_session(request).await.unwrap());
        svc.clock().advance(Duration::from_millis(1));
    }
    sessions
}

/// By creation, oldest or newest first, of an app or a user, in one page or many: the order
/// sessions were made in, whatever was appended since; a token keeps its order.
pub(super) async fn lists_order_by_creation_both_ways(svc: Svc) {
    let app = unique("app");
    let mut sessions = created_in_order(&svc, &app, 7).await;
    // The oldest becomes the newest by update, not by creation.
    svc.append_event(&mut sessions[0], event_now(&svc, json!({"k": 1}))).await.unwrap();
    let made: Vec<String> = (0..7).map(|i| format!("s{i:02}")).collect();
    let mut newest_made = made.clone();
    newest_made.reverse();

    let by_creation = ListSessions::app(&app).order_by(ListOrder::CreateTime);
    assert_eq!(ids(&svc.list_sessions(by_creation.clone()).await.unwrap().sessions), made);
    assert_eq!(all_pages(&svc, by_creation.clone().page_size(2), 10).await, made);
    assert_eq!(all_pages(&svc, by_creation.clone().newest_first().page_size(3), 10).await, newest_made);
    let by_update = ids(&svc.list_sessions(ListSessions::app(&app).newest_first()).await.unwrap().sessions);
    assert_eq!(by_update[0], "s00", "by update the appended session leads");

    let user = ListSessions::user(&app, "u").order_by(ListOrder::CreateTime).newest_first();
    assert_eq!(all_pages(&svc, user.page_size(1), 10).await, ["s06", "s04", "s02", "s00"]);

    let first = svc.list_sessions(by_creation.clone().page_size(2)).await.unwrap();
    let token = first.next_page_token.unwrap();
    let wrong = svc.list_sessions(ListSessions::app(&app).page_size(2).page_token(&token)).await.unwrap_err();
    assert_eq!(wrong.kind(), ErrorKind::InvalidArgument, "a by-creation token in a by-update list");
    let counted = svc.list_sessions(by_creation.page_size(2).offset(5).count()).await.unwrap();
    assert_eq!((ids(&counted.sessions), counted.total_size), (vec!["s05".into(), "s06".into()], Some(7)));
}

/// A filter admits exactly the sessions every condition holds for (display name, labels, time
/// ranges, session state), in every order and page size; counts count them; a filter nothing
/// meets lists nothing.
pub(super) async fn lists_filter_by_name_labels_times_and_state(svc: Svc) {
    let app = unique("app");
    let mut made = Vec::new();
    for i in 0..8 {
        let mut request = CreateSession::new(&app, "u")
            .id(format!("s{i:02}"))
            .with_state(obj(json!({"stage": i % 3, "kind": if i < 4 { "chat" } else { "task" }, "user:x": i})))
            .label("team", if i % 2 == 0 { "red" } else { "blue" });
        if i % 4 == 0 {
            request = request.display_name("Trip").label("tier", "gold");
        }
        made.push(svc.create_session(request).await.unwrap());
        svc.clock().advance(Duration::from_millis(1));
    }
    let check = |filter: SessionFilter, expected: Vec<&str>| {
        let (svc, app) = (&svc, &app);
        let expected: Vec<String> = expected.into_iter().map(str::to_owned).collect();
        async move {
            let request = ListSessions::user(app, "u").order_by(ListOrder::CreateTime).filter(filter.clone());
            let one = svc.list_sessions(request.clone().count()).await.unwrap();
            assert_eq!(ids(&one.sessions), expected, "{filter:?}");
            assert_eq!(one.total_size, Some(expected.len()), "{filter:?}");
            assert_eq!(all_pages(svc, request.clone().page_size(1), 20).await, expected, "{filter:?} in pages");
            let mut backwards = expected.clone();
            backwards.reverse();
            let newest = all_pages(svc, request.newest_first().page_size(2), 20).await;
            assert_eq!(newest, backwards, "{filter:?} newest first");
            let app_wide = svc.list_sessions(ListSessions::app(app).filter(filter.clone())).await.unwrap();
            let app_wide: BTreeSet<String> = ids(&app_wide.sessions).into_iter().collect();
            assert_eq!(app_wide, expected.iter().cloned().collect(), "{filter:?} of the app by update");
        }
    };
    let parse = |text: &str| parse_session_filter(text).unwrap().filter;
    check(parse(r#"display_name="Trip""#), vec!["s00", "s04"]).await;
    check(parse(r#"labels.team="blue""#), vec!["s01", "s03", "s05", "s07"]).await;
    check(parse(r#"labels.team="red" AND labels.tier="gold""#), vec!["s00", "s04"]).await;
    check(parse(r#"state.stage=1"#), vec!["s01", "s04", "s07"]).await;
    check(parse(r#"state.stage=1.0 AND state.kind="task""#), vec!["s04", "s07"]).await;
    check(parse(r#"state.kind="chat" AND labels.team="blue""#), vec!["s01", "s03"]).await;
    check(parse(r#"state.missing=null"#), vec![]).await;
    check(parse(r#"display_name="Nobody""#), vec![]).await;

    let created = |i: usize| made[i].create_time_micros();
    let between = |from: usize, to: usize| TimeRange::default().from(created(from)).to(created(to));
    let expected: Vec<String> =
        made.iter().filter(|s| between(2, 5).contains(s.create_time_micros())).map(|s| s.id().to_owned()).collect();
    let expected_ids: Vec<&str> = expected.iter().map(String::as_str).collect();
    check(SessionFilter { create_time: between(2, 5), ..SessionFilter::default() }, expected_ids.clone()).await;
    let red_in_range: Vec<&str> = expected_ids.iter().copied().filter(|id| ["s02", "s04"].contains(id)).collect();
    check(SessionFilter { create_time: between(2, 5), ..parse(r#"labels.team="red""#) }, red_in_range).await;

    // By update: appends move sessions into a range of update times.
    let since = svc.service().now_micros();
    for i in [6, 1] {
        svc.append_event(&mut made[i], event_now(&svc, json!({"touched": true}))).await.unwrap();
    }
    let touched = SessionFilter { update_time: TimeRange::default().from(since), ..SessionFilter::default() };
    let by_update = svc.list_sessions(ListSessions::user(&app, "u").filter(touched.clone())).await.unwrap();
    assert_eq!(ids(&by_update.sessions), ["s06", "s01"], "in update order");
    let none = SessionFilter { update_time: TimeRange::default().from(since).to(since - 1), ..touched };
    assert!(svc.list_sessions(ListSessions::app(&app).filter(none).count()).await.unwrap().sessions.is_empty());
}

/// Pages by creation visit every session there all along exactly once while others are
/// appended to, created and deleted between pages, either way; by update newest first, none
/// repeats and every session not written meanwhile appears once.
pub(super) async fn list_pages_stay_stable_under_writes(svc: Svc) {
    let app = unique("app");
    let mut sessions = created_in_order(&svc, &app, 12).await;
    let all: BTreeSet<String> = ids(&sessions).into_iter().collect();
    for (order, newest_first) in
        [(ListOrder::CreateTime, false), (ListOrder::CreateTime, true), (ListOrder::UpdateTime, true)]
    {
        let mut request = ListSessions::app(&app).order_by(order).page_size(3);
        if newest_first {
            request = request.newest_first();
        }
        let (mut seen, mut written) = (Vec::new(), BTreeSet::new());
        for round in 0.. {
            let page = svc.list_sessions(request.clone()).await.unwrap();
            seen.extend(ids(&page.sessions));
            let Some(token) = page.next_page_token else { break };
            request = request.page_token(token);
            // Between pages: touch one seen and one unseen session, and make a new one.
            for i in [round % 12, (round * 5 + 7) % 12] {
                svc.append_event(&mut sessions[i], event_now(&svc, json!({"round": round}))).await.unwrap();
                written.insert(sessions[i].id().to_owned());
            }
            let extra = format!("new{order:?}{newest_first}{round}");
            svc.create_session(CreateSession::new(&app, "w").id(extra)).await.unwrap();
            assert!(round < 20, "pagination does not end");
        }
        let distinct: BTreeSet<String> = seen.iter().cloned().collect();
        assert_eq!(distinct.len(), seen.len(), "{order:?}: a session listed twice: {seen:?}");
        let kept: BTreeSet<String> = match order {
            ListOrder::CreateTime => all.clone(),
            ListOrder::UpdateTime => all.difference(&written).cloned().collect(),
        };
        assert!(
            kept.is_subset(&distinct),
            "{order:?} newest first {newest_first}: skipped {:?}",
            kept.difference(&distinct)
        );
        if order == ListOrder::CreateTime && !newest_first {
            assert!(seen.iter().any(|id| id.starts_with("new")), "sessions made meanwhile come at the end");
        }
        for session in &mut sessions {
            // Fresh handles for the next order's appends.
            let key = session.key().clone();
            *session = super::reload(&svc, &key).await;
        }
    }
}

/// A display name and labels set after creation are kept (the other attribute, the expiry, the
/// state and the last update time untouched), cleared on request, and what lists filter on; a
/// missing session is not found; bad ones are refused.
pub(super) async fn display_names_and_labels_are_set_and_listed_by(svc: Svc) {
    use agentstate::store::AttributesUpdate;
    let app = unique("app");
    let expire = 4_102_444_800.0; // 2100-01-01
    let made =
        svc.create_session(CreateSession::new(&app, "u").id("s").label("old", "x").expire_time(expire)).await.unwrap();
    let other = svc.create_session(CreateSession::new(&app, "u").id("t")).await.unwrap();
    let update = AttributesUpdate {
        display_name: Some(Some("Trip".into())),
        labels: Some([("team".to_owned(), "red".to_owned())].into()),
        ..AttributesUpdate::default()
    };
    svc.set_attributes(made.key(), update).await.unwrap();
    let mut loaded = super::reload(&svc, made.key()).await;
    assert_eq!(loaded.attributes().display_name.as_deref(), Some("Trip"));
    assert_eq!(loaded.attributes().labels, [("team".to_owned(), "red".to_owned())].into(), "replaced, not merged");
    assert_eq!(loaded.attributes().expire_time_micros, Some(4_102_444_800_000_000), "the expiry stays");
    assert_eq!(loaded.last_update_micros(), made.last_update_micros(), "not an update of the session");
    svc.append_event(&mut loaded, event("inv", json!({"k": 1}))).await.expect("a handle from before still appends");

    let red =
        svc.list_sessions(ListSessions::app(&app).filter(parse_session_filter(r#"labels.team="red""#).unwrap().filter));
    assert_eq!(ids(&red.await.unwrap().sessions), ["s"]);
    // Only the name: the labels stay; then clear both.
    svc.set_attributes(
        made.key(),
        AttributesUpdate { display_name: Some(Some("Trip 2".into())), ..AttributesUpdate::default() },
    )
    .await
    .unwrap();
    let renamed = super::reload(&svc, made.key()).await;
    assert_eq!((renamed.attributes().display_name.as_deref(), renamed.attributes().labels.len()), (Some("Trip 2"), 1));
    svc.set_attributes(
        made.key(),
        AttributesUpdate { display_name: Some(None), labels: Some(Default::default()), ..AttributesUpdate::default() },
    )
    .await
    .unwrap();
    let cleared = super::reload(&svc, made.key()).await;
    assert_eq!(cleared.attributes().display_name, None);
    assert!(cleared.attributes().labels.is_empty());
    assert_eq!(cleared.attributes().expire_time_micros, Some(4_102_444_800_000_000));
    let untouched = super::reload(&svc, other.key()).await;
    let attributes = untouched.attributes();
    assert!(attributes.display_name.is_none() && attributes.labels.is_empty(), "another session untouched");

    let nope = super::key(&app, "u", "nope");
    let missing = svc.set_attributes(
        &nope,
        AttributesUpdate { display_name: Some(Some("x".into())), ..AttributesUpdate::default() },
    );
    assert_eq!(missing.await.unwrap_err().kind(), ErrorKind::NotFound);
    let too_long = AttributesUpdate { display_name: Some(Some("x".repeat(300))), ..AttributesUpdate::default() };
    assert_eq!(svc.set_attributes(made.key(), too_long).await.unwrap_err().kind(), ErrorKind::InvalidArgument);

    // Name, labels and expiry in one step (the managed service's PATCH of all three): each set,
    // the expiry followed as `set_expire_time` follows it, then cleared to never.
    let later = 4_133_980_800_000_000; // 2101-01-01
    let all = AttributesUpdate {
        display_name: Some(Some("Trip 3".into())),
        labels: Some([("team".to_owned(), "blue".to_owned())].into()),
        expire_time_micros: Some(Some(later)),
    };
    svc.set_attributes(made.key(), all).await.unwrap();
    let together = super::reload(&svc, made.key()).await;
    let attributes = together.attributes();
    assert_eq!(
        (
            attributes.display_name.as_deref(),
            attributes.labels.get("team").map(String::as_str),
            attributes.expire_time_micros
        ),
        (Some("Trip 3"), Some("blue"), Some(later))
    );
    let never = AttributesUpdate { expire_time_micros: Some(None), ..AttributesUpdate::default() };
    svc.set_attributes(made.key(), never).await.unwrap();
    let kept = super::reload(&svc, made.key()).await;
    assert_eq!(
        (kept.attributes().display_name.as_deref(), kept.attributes().expire_time_micros),
        (Some("Trip 3"), None)
    );
}
