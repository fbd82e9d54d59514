//! The conformance suite every agentstate backend must pass, written once.
//!
//! A backend's test file only says how to make a service; the macro expands to one `#[test]` per
//! case of the behaviour contract (scopes, create, get, list, delete, append, concurrency):
//!
//! ```ignore
//! use std::sync::Arc;
//! use agentstate::{InMemorySessionService, SessionService};
//!
//! agentstate_conformance::session_service_tests!(|| async {
//!     Arc::new(InMemorySessionService::new()) as Arc<dyn SessionService>
//! });
//! ```
//!
//! Every case works in apps of its own (random names), so one database can serve every case and
//! every concurrent run. [`check_against_model`] runs random operation sequences against the
//! service and a deliberately simple model of the contract, comparing every observable result.
//! [`Alternating`] turns every case into a multi-process one. With the `databases` feature,
//! the `databases` module makes throwaway PostgreSQL and MySQL databases for the SQL backends' runs;
//! with the `reference` feature, the `reference` module finds ADK for Python for the tests that
//! run it next to agentstate.
//!
//! This crate is test code: a failed expectation panics with a message saying what differed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::sync::Arc;

use agentstate::SessionService;

mod alternating;
mod cases;
#[cfg(feature = "databases")]
pub mod databases;
mod model;
#[cfg(feature = "reference")]
pub mod reference;

pub use alternating::Alternating;
pub use model::{check_against_model, check_against_model_lacking};

/// Runs one case on a fresh two-worker runtime (real parallelism for the concurrency cases)
/// against a service made by `factory`.
pub fn run<F, FF, C, CF>(factory: F, case: C)
where
    F: FnOnce() -> FF,
    FF: Future<Output = Arc<dyn SessionService>>,
    C: FnOnce(Arc<dyn SessionService>) -> CF,
    CF: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime");
    runtime.block_on(async move { case(factory().await).await });
}

/// Runs the conformance case called `name` against a service made by `factory` (what each test
/// of [`session_service_tests!`] does).
pub fn run_case<F, FF>(factory: F, name: &str)
where
    F: FnOnce() -> FF,
    FF: Future<Output = Arc<dyn SessionService>>,
{
    run(factory, cases::named(name));
}

/// The names of every conformance case, in the table's order: for a run that cannot be one
/// `#[test]` per case (one that starts servers of its own and must stop them), with [`run_case`].
pub fn case_names() -> impl Iterator<Item = &'static str> {
    cases::ALL.iter().map(|(name, _)| *name)
}

/// Keys for the runs through encryption at rest: a rotation in progress (new writes with `k2`,
/// `k1` still read).
#[cfg(feature = "encryption")]
pub const TEST_KEYS: &str =
    "k2:c2Vjb25kIHRlc3Qga2V5IGZvciBhZ2VudHN0YXRlISE=,k1:Zmlyc3QgdGVzdCBrZXkgZm9yIGFnZW50c3RhdGUhISE=";

/// `store` behind encryption at rest with [`TEST_KEYS`], as a service: the suite run through it
/// proves every guarantee holds on ciphertext (per-key merges of `user:`/`app:` keys included).
#[cfg(feature = "encryption")]
pub async fn encrypted<S: agentstate::store::SessionStore>(store: S) -> Arc<dyn SessionService> {
    let keys = agentstate::crypt::KeyRing::parse(TEST_KEYS).expect("the test keys parse");
    Arc::new(agentstate::crypt::EncryptedStore::open(store, keys).await.expect("the store takes the test keys"))
}

/// A name no other case or run uses: `prefix-<uuid>`.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", agentstate::Event::new_id())
}

/// What a backend may be unable to guarantee. A case that needs a capability the backend says
/// it lacks is still generated, but ignored with its reason: `cargo test` lists it as ignored,
/// never silently passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Capability {
    /// Session ids are unique per user, so two users may each have a session `s1`
    /// (`session_ids_per_user` in the macro). The managed service keeps them unique per app.
    SessionIdsPerUser,
    /// The service removes expired sessions when asked
    /// ([`SessionService::sweep_expired`];
    /// `sweeps_expired_sessions` in the macro). A client of a remote service cannot: the service
    /// sweeps itself.
    SweepsExpiredSessions,
    /// The service erases a user's data
    /// ([`SessionService::erase_user`]; `erases_users` in
    /// the macro). The managed service's API has no such operation.
    ErasesUsers,
    /// The service drops old events by a retention policy
    /// ([`SessionService::apply_retention`]; `drops_old_events` in the macro). The managed
    /// service's API has no such operation.
    DropsOldEvents,
    /// The service moves a session's expire time
    /// ([`SessionService::set_expire_time`]; `moves_expire_times` in the macro). The client of
    /// the managed service does not (yet).
    MovesExpireTimes,
    /// The service lists its apps and an app's users
    /// ([`SessionService::list_apps`]; `lists_apps` in the macro). The managed service's API
    /// addresses one app (engine) at a time.
    ListsApps,
}

/// Expands to one `#[test]` per conformance case, each calling `$factory` (a closure returning a
/// future of `Arc<dyn SessionService>`) for its service. A backend that lacks a
/// [`Capability`] names it: `session_service_tests!(factory, lacks: [session_ids_per_user])`.
///
/// The list below is the one table of cases: it also builds the registry the tests run from, so
/// a case function cannot exist without being listed (it would be dead code) nor be listed
/// without existing. A case that needs a capability says which, in brackets.
#[macro_export]
macro_rules! session_service_tests {
    ($factory:expr) => {
        $crate::session_service_tests!($factory, lacks: []);
    };
    ($factory:expr, lacks: [$($lack:ident),* $(,)?]) => {
        $crate::session_service_tests!(@cases (tests $factory; [$($lack)*]));
    };
    (@registry) => {
        $crate::session_service_tests!(@cases (registry));
    };
    (@cases $mode:tt) => {
        $crate::session_service_tests!(@each $mode;
            create_splits_state_by_scope,
            create_generates_missing_ids,
            create_existing_id_is_already_exists,
            same_id_for_another_user_or_app_is_another_session [session_ids_per_user],
            app_prefix_is_checked_before_user_prefix,
            invalid_ids_are_rejected,
            ids_are_case_sensitive,
            attributes_are_kept,
            create_time_is_kept,
            merged_state_groups_session_then_app_then_user,
            shared_scopes_are_visible_in_other_sessions,
            shared_scope_changes_are_visible_on_next_read,
            scopes_are_isolated_between_users_and_apps,
            get_missing_is_none,
            get_selects_event_windows,
            raw_reads_show_what_decoded_reads_do,
            handles_are_independent_copies,
            event_pages_walk_history_in_order,
            event_pages_start_at_a_time,
            sessions_are_found_by_app_and_id,
            list_orders_merges_and_omits_events,
            list_unknown_app_or_user_is_empty,
            list_pages_cover_every_session_once,
            apps_users_and_event_counts_are_listed [lists_apps],
            delete_removes_session_and_keeps_shared_state,
            append_to_missing_session_is_not_found,
            append_applies_delta_by_scope,
            partial_events_are_not_stored,
            temp_keys_live_only_on_the_handle,
            stale_handle_is_rejected_and_left_unchanged,
            duplicate_event_ids,
            event_ids_are_assigned,
            timestamps_strictly_increase,
            unknown_event_fields_round_trip,
            invalid_events_are_rejected_without_changes,
            deleted_keys_are_gone_in_every_scope,
            state_at_any_event_or_time,
            event_diffs_name_each_change,
            rewind_restores_session_keys,
            fork_copies_history_up_to_an_event,
            expired_sessions_behave_as_deleted,
            expire_times_move_both_ways [moves_expire_times],
            sweeps_remove_expired_sessions_in_batches [sweeps_expired_sessions],
            erasing_a_user_removes_everything_of_theirs [erases_users],
            retention_drops_old_events_and_history_stops_there [drops_old_events],
            concurrent_deletion_and_setting_of_a_user_key,
            concurrent_shared_scope_writers_lose_nothing,
            concurrent_handles_conflict_exactly_once,
            serialised_appends_through_one_handle_keep_order,
        );
    };
    (@each (tests $factory:expr; $lacks:tt); $($case:ident $([$needs:ident])?),* $(,)?) => {
        $( $crate::__conformance_case! { ($) $factory; $case; [$($needs)?]; $lacks } )*
    };
    (@each (registry); $($case:ident $([$needs:ident])?),* $(,)?) => {
        /// Every case, by name, in the table's order.
        pub(crate) const ALL: &[(&str, CaseFn)] = &[$((stringify!($case), |svc| Box::pin($case(svc)))),*];
    };
}

/// One test of [`session_service_tests!`]: plain, or ignored when the case needs a capability the
/// backend lacks. (`$d` is a `$`, so the inner macro can have variables of its own.)
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_case {
    (($d:tt) $factory:expr; $case:ident; []; [$($lack:ident)*]) => {
        #[test]
        fn $case() {
            $crate::run_case($factory, stringify!($case));
        }
    };
    (($d:tt) $factory:expr; $case:ident; [$needs:ident]; [$($lack:ident)*]) => {
        macro_rules! __with_capability {
            ($needs $d($d rest:ident)*) => {
                #[test]
                #[ignore = "the backend lacks the capability this case needs (agentstate_conformance::Capability)"]
                fn $case() {
                    $crate::run_case($factory, stringify!($case));
                }
            };
            ($d first:ident $d($d rest:ident)*) => {
                __with_capability!($d($d rest)*);
            };
            () => {
                #[test]
                fn $case() {
                    $crate::run_case($factory, stringify!($case));
                }
            };
        }
        __with_capability!($($lack)*);
    };
}

/// Re-encryption on a backend: data written with one key (and some before encryption was on) is
/// re-encrypted by [`agentstate::crypt::EncryptedStore::rekey`], after which the new key alone
/// reads every session, state value, event and history answer. `open` makes a new handle to the
/// same storage each time it is called (each with the same key prefix or database).
#[cfg(feature = "encryption")]
pub async fn check_rekey<S, F, Fut>(open: F)
where
    S: agentstate::store::SessionStore,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    use agentstate::crypt::{EncryptedStore, KeyRing};
    use agentstate::history::HistoryAt;
    use agentstate::{CreateSession, Event, GetSessionConfig};
    use serde_json::json;

    let app = unique("rekey");
    let old = KeyRing::generate("old").unwrap();
    let new = KeyRing::generate("new").unwrap();
    // Before encryption: plaintext.
    let plain = open().await;
    let mut legacy =
        plain.create_session(CreateSession::new(&app, "u").id("legacy").state("k", json!("plain"))).await.unwrap();
    plain.append_event(&mut legacy, Event::new("inv").author("user").delta("user:plain", json!(1))).await.unwrap();
    // Then with the old key.
    let first = EncryptedStore::open(open().await, KeyRing::parse(&old).unwrap()).await.unwrap();
    let request =
        CreateSession::new(&app, "u").id("s").state("secret", json!({"n": 1})).state("app:shared", json!("a"));
    let mut session = first.create_session(request).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..70 {
        let event = Event::new("inv").author("agent").delta("secret", json!({"n": i})).delta("user:seen", json!(i));
        ids.push(first.append_event(&mut session, event).await.unwrap().id);
    }
    // History snapshots exist (a replay keeps them), written with the old key.
    first.state_at(session.key(), HistoryAt::AfterEvent(ids[68].clone())).await.unwrap();
    // A user with state and no session left.
    let mut orphan = first
        .create_session(CreateSession::new(&app, "orphan").id("o").state("user:mail", json!("o@x")))
        .await
        .unwrap();
    first.append_event(&mut orphan, Event::new("inv")).await.unwrap();
    first.delete_session(orphan.key()).await.unwrap();

    // Rotate: the new key writes, both read; rekey.
    let rotating = EncryptedStore::open(open().await, KeyRing::parse(&format!("{new},{old}")).unwrap()).await.unwrap();
    let mut seen = 0;
    let done = rotating.rekey(|p| seen = p.sessions).await.unwrap();
    assert!(done.sessions >= 2 && seen == done.sessions, "{done:?}");
    assert!(done.values >= 5, "session, app and user values, the plaintext ones too: {done:?}");
    assert!(done.events >= 71, "{done:?}");
    assert!(done.snapshots >= 2, "the creation snapshot and a replay's: {done:?}");
    let again = rotating.rekey(|_| {}).await.unwrap();
    assert_eq!((again.values, again.events, again.snapshots), (0, 0, 0), "nothing left: {again:?}");

    // The new key alone reads everything.
    let only_new = EncryptedStore::open(open().await, KeyRing::parse(&new).unwrap()).await.unwrap();
    let read = only_new.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(read.state().get("secret"), Some(&json!({"n": 69})));
    assert_eq!(read.state().get("app:shared"), Some(&json!("a")));
    assert_eq!(read.events().len(), 70);
    let at = only_new.state_at(session.key(), HistoryAt::AfterEvent(ids[10].clone())).await.unwrap().unwrap();
    assert_eq!(at.state.get("secret"), Some(&json!({"n": 10})));
    let creation = only_new.state_at(session.key(), HistoryAt::Creation).await.unwrap().unwrap();
    assert_eq!(creation.state.get("secret"), Some(&json!({"n": 1})));
    let legacy = only_new.get_session(legacy.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!((legacy.state().get("k"), legacy.events().len()), (Some(&json!("plain")), 1));
    let back = only_new.create_session(CreateSession::new(&app, "orphan")).await.unwrap();
    assert_eq!(back.state().get("user:mail"), Some(&json!("o@x")), "a user's state without sessions too");
    // And what is stored is sealed with it.
    let raw = open().await.get_session(session.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert!(raw.state().get("secret").unwrap().as_str().unwrap().starts_with("$as1$new$"));
    let raw_legacy = open().await.get_session(legacy.key(), GetSessionConfig::default()).await.unwrap().unwrap();
    assert!(raw_legacy.state().get("k").unwrap().as_str().unwrap().starts_with("$as1$new$"), "plaintext got encrypted");
}
