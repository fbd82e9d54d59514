//! The conformance suite every agentstate store must pass, written once.
//!
//! A backend's test file only says how to make its store; the macro expands to one `#[test]` per
//! case of the behaviour contract, on every wrapper stack the server can build ([`Stack`]: plain,
//! encrypted, refreshing expiry on append, both), each with the model test:
//!
//! ```ignore
//! use std::sync::Arc;
//! use agentstate::clock::ManualClock;
//! use agentstate::store::SessionStore;
//!
//! async fn store(_clock: ManualClock) -> Arc<dyn SessionStore> {
//!     Arc::new(agentstate::InMemoryStore::new())
//! }
//! agentstate_conformance::session_store_tests!(store);
//! ```
//!
//! The service each case runs against reads a [`ManualClock`]:
//! expiry and retention cases move it instead of sleeping. A store whose server keeps time of its
//! own (the managed-service client's test server) is given that clock. Every case works in apps
//! of its own (random names), so one database can serve every case and every concurrent run.
//! [`check_against_model`] runs random operation sequences against the service and a
//! deliberately simple model of the contract, comparing every observable result.
//! [`Alternating`] turns every case into a multi-process one. With the `databases` feature, the
//! `databases` module makes throwaway PostgreSQL and MySQL databases for the SQL backends' runs;
//! with the `reference` feature, the `reference` module finds ADK for Python for the tests that
//! run it next to agentstate.
//!
//! This crate is test code: a failed expectation panics with a message saying what differed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::sync::Arc;

use agentstate::clock::ManualClock;
use agentstate::store::SessionStore;

mod alternating;
mod cases;
#[cfg(feature = "databases")]
pub mod databases;
mod harness;
mod model;
#[cfg(feature = "redis-servers")]
pub mod redis_servers;
#[cfg(feature = "reference")]
pub mod reference;
mod rekey;
pub mod views;

pub use alternating::Alternating;
pub use cases::check_store_answers_views;
pub use harness::{Harness, REFRESH_TTL, Stack, StoreFuture, TEST_KEYS};
pub use model::{check_against_model, check_against_model_lacking};
pub use rekey::check_rekey;

/// Runs one case on a fresh runtime against a service over the store `factory` makes, on `stack`.
pub fn run<F, FF, C, CF>(factory: F, stack: Stack, case: C)
where
    F: FnOnce(ManualClock) -> FF,
    FF: Future<Output = Arc<dyn SessionStore>>,
    C: FnOnce(Harness) -> CF,
    CF: Future<Output = ()>,
{
    harness::block_on(async move { case(Harness::new(factory, stack).await).await });
}

/// Runs the conformance case called `name` (what each test of [`session_store_tests!`] does).
pub fn run_case<F, FF>(factory: F, stack: Stack, name: &str)
where
    F: FnOnce(ManualClock) -> FF,
    FF: Future<Output = Arc<dyn SessionStore>>,
{
    run(factory, stack, cases::named(name));
}

/// The names of every conformance case, in the table's order: for a run that cannot be one
/// `#[test]` per case (one that starts servers of its own and must stop them), with [`run_case`].
pub fn case_names() -> impl Iterator<Item = &'static str> {
    cases::ALL.iter().map(|(name, ..)| *name)
}

/// The capability the case called `name` needs, if any: a run of [`case_names`] leaves out the
/// cases whose capability [`Capability::lacked_by`] its store.
pub fn case_capability(name: &str) -> Option<Capability> {
    let (_, needs, _) = cases::ALL.iter().find(|(n, ..)| *n == name)?;
    needs.map(Capability::from_name)
}

/// What [`check_store`] ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checked {
    /// Cases run (on every stack the store allows), all passed.
    pub ran: usize,
    /// Cases not run: they need a capability the store lacks.
    pub skipped: usize,
}

/// The whole suite for a store of one's own, in one call (a doctest, a `main`): every case its
/// capabilities allow, on the plain stack, and on the encrypted and refreshing stacks when the
/// store has what they need (admin, lifecycle), then the model test. Panics on the first
/// failure. For a test file, [`session_store_tests!`] gives one `#[test]` per case instead.
pub fn check_store<F, FF>(factory: F) -> Checked
where
    F: Fn(ManualClock) -> FF + Clone,
    FF: Future<Output = Arc<dyn SessionStore>>,
{
    let lacked = harness::block_on(async { Capability::lacked_by(factory(ManualClock::new()).await.as_ref()) });
    let has = |name: &str| !lacked.contains(&Capability::from_name(name));
    let mut stacks = vec![Stack::Plain];
    stacks.extend(has("lifecycle").then_some(Stack::Refresh));
    stacks.extend(has("admin").then_some(Stack::Encrypted));
    let mut checked = Checked::default();
    for stack in stacks {
        for (name, needs, _) in cases::ALL {
            if needs.is_none_or(has) {
                run_case(factory.clone(), stack, name);
                checked.ran += 1;
            } else {
                checked.skipped += 1;
            }
        }
    }
    check_against_model_lacking(factory, Stack::Plain, 16, &lacked);
    checked
}

/// A name no other case or run uses: `prefix-<uuid>`.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", agentstate::Event::new_id())
}

/// What a store may lack. A case that needs it is still generated, but ignored with its reason:
/// `cargo test` lists it as ignored, never silently passed. A test of the macro checks that what
/// a backend declares is what its store's [capabilities](agentstate::store::capability) say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Capability {
    /// Session ids are unique per user, so two users may each have a session `s1`
    /// (`session_ids_per_user` in the macro). The managed service keeps them unique per app.
    SessionIdsPerUser,
    /// History reads are exact, creation state included: the store keeps history snapshots
    /// ([`HistoryStore`](agentstate::store::HistoryStore)) or answers history itself
    /// ([`RemoteHistory`](agentstate::store::RemoteHistory)) (`history` in the macro).
    History,
    /// The store drops old events by a retention policy
    /// ([`HistoryStore`](agentstate::store::HistoryStore); `retention` in the macro).
    Retention,
    /// The store sweeps expired sessions, moves expire times and erases users
    /// ([`LifecycleStore`](agentstate::store::LifecycleStore); `lifecycle` in the macro).
    Lifecycle,
    /// The store lists its apps and an app's users
    /// ([`AdminStore`](agentstate::store::AdminStore); `admin` in the macro).
    Admin,
    /// The store reads `app:` and `user:` state without a session
    /// ([`SharedStateStore`](agentstate::store::SharedStateStore); `shared_state` in the macro).
    SharedState,
    /// The store keeps long-term memories
    /// ([`MemoryStore`](agentstate::store::MemoryStore); `memory` in the macro).
    Memory,
    /// The store keeps run leases, shared by every service over it
    /// ([`LeaseStore`](agentstate::store::LeaseStore); `leases` in the macro).
    Leases,
    /// The store keeps versioned artifacts
    /// ([`ArtifactStore`](agentstate::store::ArtifactStore); `artifacts` in the macro).
    Artifacts,
}

impl Capability {
    /// The capabilities (of those the store can declare) that `store` lacks.
    pub fn lacked_by(store: &dyn SessionStore) -> Vec<Capability> {
        let has = store.capabilities();
        [
            (Capability::History, has.answers_history()),
            (Capability::Retention, has.history.is_some()),
            (Capability::Lifecycle, has.lifecycle.is_some()),
            (Capability::Admin, has.admin.is_some()),
            (Capability::SharedState, has.shared_state.is_some()),
            (Capability::Memory, has.memory.is_some()),
            (Capability::Leases, has.leases.is_some()),
            (Capability::Artifacts, has.artifacts.is_some()),
        ]
        .into_iter()
        .filter_map(|(capability, present)| (!present).then_some(capability))
        .collect()
    }

    /// The macro's name for it.
    pub fn from_name(name: &str) -> Capability {
        match name {
            "session_ids_per_user" => Capability::SessionIdsPerUser,
            "history" => Capability::History,
            "retention" => Capability::Retention,
            "lifecycle" => Capability::Lifecycle,
            "admin" => Capability::Admin,
            "shared_state" => Capability::SharedState,
            "memory" => Capability::Memory,
            "leases" => Capability::Leases,
            "artifacts" => Capability::Artifacts,
            other => panic!("no conformance capability is called {other}"),
        }
    }
}

/// Checks that a backend declares what its store lacks: the `lacks` of its
/// [`session_store_tests!`] against the store's own capabilities.
pub fn check_declared_capabilities<F, FF>(factory: F, lacks: &[&str])
where
    F: FnOnce(ManualClock) -> FF,
    FF: Future<Output = Arc<dyn SessionStore>>,
{
    harness::block_on(async move {
        let store = factory(ManualClock::new()).await;
        let mut declared: Vec<Capability> = lacks
            .iter()
            .map(|name| Capability::from_name(name))
            .filter(|c| *c != Capability::SessionIdsPerUser)
            .collect();
        let mut lacked = Capability::lacked_by(store.as_ref());
        declared.sort_by_key(|c| format!("{c:?}"));
        lacked.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(declared, lacked, "the capabilities the tests declare missing are not the ones the store lacks");
    });
}

/// Expands to the whole suite for a store: a module per [`Stack`] (`plain`, `encrypted`,
/// `refresh`, `encrypted_refresh`), each with one `#[test]` per conformance case and the model
/// test, and a test that the declared capabilities are the store's. `$factory` is a function or
/// closure taking the case's [`ManualClock`](agentstate::clock::ManualClock) and returning a
/// future of `Arc<dyn SessionStore>`. A store that lacks a [`Capability`] names it:
/// `session_store_tests!(store, lacks: [lifecycle])`; `model_cases: N` sets the model test's
/// sequences on the plain stack (the others run a quarter, at least 8).
///
/// The list below is the one table of cases: it also builds the registry the tests run from, so
/// a case function cannot exist without being listed (it would be dead code) nor be listed
/// without existing. A case that needs a capability says which, in brackets.
#[macro_export]
macro_rules! session_store_tests {
    ($factory:expr) => {
        $crate::session_store_tests!($factory, lacks: []);
    };
    ($factory:expr, lacks: [$($lack:ident),* $(,)?]) => {
        $crate::session_store_tests!($factory, lacks: [$($lack),*], model_cases: 32);
    };
    ($factory:expr, lacks: [$($lack:ident),* $(,)?], model_cases: $cases:expr) => {
        fn conformance_store(clock: ::agentstate::clock::ManualClock) -> $crate::StoreFuture {
            ::std::boxed::Box::pin(($factory)(clock))
        }

        #[test]
        fn capabilities_are_as_declared() {
            $crate::check_declared_capabilities(conformance_store, &[$(stringify!($lack)),*]);
        }

        $crate::session_store_tests!(@stack plain, Plain, $cases, [$($lack)*]);
        // Encryption at rest records its keys in the store's metadata (the admin capability); the
        // refresh policy moves expire times in the store (the lifecycle capability).
        $crate::__conformance_stack! { ($) refresh, Refresh, ($cases / 4).max(8), [lifecycle], [$($lack)*] }
        $crate::__conformance_stack! { ($) encrypted, Encrypted, ($cases / 4).max(8), [admin], [$($lack)*] }
        $crate::__conformance_stack! {
            ($) encrypted_refresh, EncryptedRefresh, ($cases / 4).max(8), [admin lifecycle], [$($lack)*]
        }
    };
    (@unbuildable $module:ident, $stack:ident) => {
        mod $module {
            $crate::session_store_tests!(@cases (unbuildable $stack));
        }
    };
    (@stack $module:ident, $stack:ident, $cases:expr, [$($lack:ident)*]) => {
        mod $module {
            #[test]
            fn agrees_with_the_model() {
                let lacks: &[$crate::Capability] = &[$($crate::Capability::from_name(stringify!($lack))),*];
                $crate::check_against_model_lacking(super::conformance_store, $crate::Stack::$stack, $cases, lacks);
            }

            $crate::session_store_tests!(@cases (tests $stack; [$($lack)*]));
        }
    };
    (@registry) => {
        $crate::session_store_tests!(@cases (registry));
    };
    (@cases $mode:tt) => {
        $crate::session_store_tests!(@each $mode;
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
            stored_reads_show_what_decoded_reads_do,
            compacted_views_answer_what_adk_reads,
            compacted_views_of_forks_and_rewinds [history],
            compacted_views_meet_retention_and_expiry [retention],
            compacted_views_of_ranges_with_rounded_bounds,
            bad_compactions_are_refused_and_write_nothing,
            handles_are_independent_copies,
            event_pages_walk_history_in_order,
            event_pages_start_at_a_time,
            event_pages_go_back_in_time,
            sessions_are_found_by_app_and_id,
            list_orders_merges_and_omits_events,
            list_unknown_app_or_user_is_empty,
            list_pages_cover_every_session_once,
            list_newest_first_offsets_and_counts,
            lists_order_by_creation_both_ways,
            lists_filter_by_name_labels_times_and_state,
            list_pages_stay_stable_under_writes,
            apps_users_and_event_counts_are_listed [admin],
            user_and_app_state_are_read_without_a_session [shared_state],
            user_and_app_state_are_written_without_a_session [shared_state],
            racing_shared_writes_lose_nothing [shared_state],
            delete_removes_session_and_keeps_shared_state,
            append_to_missing_session_is_not_found,
            append_applies_delta_by_scope,
            append_at_a_marker_is_an_append_without_a_handle,
            partial_events_are_not_stored,
            temp_keys_live_only_on_the_handle,
            stale_handle_is_rejected_and_left_unchanged,
            duplicate_event_ids,
            event_ids_are_assigned,
            timestamps_strictly_increase,
            event_times_are_kept_to_the_nanosecond,
            given_times_outlive_placement,
            unknown_event_fields_round_trip,
            invalid_events_are_rejected_without_changes,
            deleted_keys_are_gone_in_every_scope,
            state_at_any_event_or_time [history],
            event_diffs_name_each_change [history],
            rewind_restores_session_keys [history],
            rewind_to_an_event_keeps_what_came_before [history],
            fork_copies_history_up_to_an_event [history],
            expired_sessions_behave_as_deleted,
            expired_ids_are_taken_again_at_once,
            appends_refresh_expiry_by_the_policy,
            expire_times_move_both_ways [lifecycle],
            display_names_and_labels_are_set_and_listed_by [lifecycle],
            sweeps_remove_expired_sessions_in_batches [lifecycle],
            erasing_a_user_removes_everything_of_theirs [lifecycle],
            retention_drops_old_events_and_history_stops_there [retention],
            concurrent_deletion_and_setting_of_a_user_key,
            concurrent_shared_scope_writers_lose_nothing,
            concurrent_handles_conflict_exactly_once,
            serialised_appends_through_one_handle_keep_order,
            memories_are_found_as_adk_finds_them [memory],
            adding_a_session_again_replaces_what_it_added [memory],
            added_events_are_stored_once_per_session [memory],
            direct_memories_keep_their_fields_and_bad_ones_write_nothing [memory],
            deleted_memories_stay_deleted [memory],
            memories_never_leave_their_owner [memory],
            memories_expire_by_their_time_to_live [memory],
            memory_pages_cover_every_memory_once [memory],
            concurrent_ingestion_stores_each_event_once [memory],
            erasing_a_user_removes_their_memories [memory],
            memory_bank_names_find_their_scope [memory],
            memories_are_found_by_meaning [memory],
            a_failing_embedder_loses_no_memory [memory],
            leases_let_one_run_at_a_time [leases],
            interrupting_a_run_is_seen_on_its_next_renewal [leases],
            concurrent_runs_take_a_free_lease_once [leases],
            artifacts_are_versioned_as_adk_versions_them [artifacts],
            artifact_references_and_tombstones_load_as_adk_loads_them [artifacts],
            bad_artifacts_are_refused_and_write_nothing [artifacts],
            concurrent_saves_of_one_artifact_get_distinct_versions [artifacts],
            a_sessions_and_a_users_artifacts_are_removed_together [artifacts],
            rewinds_restore_artifact_versions_as_adk_does [artifacts],
            forks_carry_the_artifacts_of_their_fork_point [artifacts],
            opened_streamed_and_in_place_artifacts_hold_what_loads_answer [artifacts],
            retention_removes_artifact_versions_replaced_before_its_cut [artifacts],
        );
    };
    (@each (tests $stack:ident; $lacks:tt); $($case:ident $([$needs:ident])?),* $(,)?) => {
        $( $crate::__conformance_case! { ($) $stack; $case; [$($needs)?]; $lacks } )*
    };
    (@each (unbuildable $stack:ident); $($case:ident $([$needs:ident])?),* $(,)?) => {
        $(
            #[test]
            #[ignore = "the server cannot build this stack over the store (encryption needs the admin capability, the refresh policy the lifecycle one)"]
            fn $case() {
                $crate::run_case(super::conformance_store, $crate::Stack::$stack, stringify!($case));
            }
        )*
    };
    (@each (registry); $($case:ident $([$needs:ident])?),* $(,)?) => {
        /// Every case, by name, with the capability it needs, in the table's order.
        pub(crate) const ALL: &[(&str, Option<&str>, CaseFn)] =
            &[$((stringify!($case), $crate::__needs!($($needs)?), |svc| Box::pin($case(svc)))),*];
    };
}

/// A stack of [`session_store_tests!`] that needs capabilities of the store (`[$needs…]`): its
/// tests, or all of them ignored when the store lacks one.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_stack {
    (($d:tt) $module:ident, $stack:ident, $cases:expr, [], [$($lack:ident)*]) => {
        $crate::session_store_tests!(@stack $module, $stack, $cases, [$($lack)*]);
    };
    (($d:tt) $module:ident, $stack:ident, $cases:expr, [$needs:ident $($more:ident)*], [$($lack:ident)*]) => {
        macro_rules! __with_stack {
            ($needs $d($d rest:ident)*) => {
                $crate::session_store_tests!(@unbuildable $module, $stack);
            };
            ($d first:ident $d($d rest:ident)*) => {
                __with_stack!($d($d rest)*);
            };
            () => {
                $crate::__conformance_stack! { ($d) $module, $stack, $cases, [$($more)*], [$($lack)*] }
            };
        }
        __with_stack!($($lack)*);
    };
}

/// The capability a case of the table needs, by name.
#[doc(hidden)]
#[macro_export]
macro_rules! __needs {
    () => {
        None
    };
    ($needs:ident) => {
        Some(stringify!($needs))
    };
}

/// One test of [`session_store_tests!`]: plain, or ignored when the case needs a capability the
/// store lacks. (`$d` is a `$`, so the inner macro can have variables of its own.)
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_case {
    (($d:tt) $stack:ident; $case:ident; []; [$($lack:ident)*]) => {
        #[test]
        fn $case() {
            $crate::run_case(super::conformance_store, $crate::Stack::$stack, stringify!($case));
        }
    };
    (($d:tt) $stack:ident; $case:ident; [$needs:ident]; [$($lack:ident)*]) => {
        macro_rules! __with_capability {
            ($needs $d($d rest:ident)*) => {
                #[test]
                #[ignore = "the store lacks the capability this case needs (agentstate_conformance::Capability)"]
                fn $case() {
                    $crate::run_case(super::conformance_store, $crate::Stack::$stack, stringify!($case));
                }
            };
            ($d first:ident $d($d rest:ident)*) => {
                __with_capability!($d($d rest)*);
            };
            () => {
                #[test]
                fn $case() {
                    $crate::run_case(super::conformance_store, $crate::Stack::$stack, stringify!($case));
                }
            };
        }
        __with_capability!($($lack)*);
    };
}
