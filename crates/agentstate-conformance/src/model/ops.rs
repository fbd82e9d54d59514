//! The operations the model test generates: random sequences of every call of the contract,
//! over a few users, session ids and keys so that they collide often.

use proptest::prelude::*;

pub(super) const USERS: [&str; 2] = ["u0", "u1"];
pub(super) const SIDS: [&str; 3] = ["s0", "s1", "s2"];
pub(super) const SCOPES: [&str; 4] = ["", "app:", "user:", "temp:"];
pub(super) const NAMES: [&str; 3] = ["a", "b", "c"];
pub(super) const SLOTS: usize = 3;

#[derive(Debug, Clone, Copy)]
pub(super) enum IdChoice {
    Fresh,
    Empty,
    RetryLast,
    ReuseWithOtherContent,
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    Create {
        user: usize,
        sid: usize,
        state: Vec<(usize, usize, Option<i64>)>,
    },
    Load {
        slot: usize,
        user: usize,
        sid: usize,
    },
    Get {
        user: usize,
        sid: usize,
        recent: Option<usize>,
        after_nth_newest: Option<usize>,
    },
    Append {
        slot: usize,
        delta: Vec<(usize, usize, Option<i64>)>,
        /// Keys the event deletes (scope, name).
        deleted: Vec<(usize, usize)>,
        offset_micros: i64,
        partial: bool,
        id: IdChoice,
    },
    Delete {
        user: usize,
        sid: usize,
    },
    List {
        user: Option<usize>,
        page_size: Option<usize>,
    },
    /// The history state after and before the session's `nth` event (mod its count), and that
    /// event's diff; the creation state when it has none.
    History {
        user: usize,
        sid: usize,
        nth: usize,
    },
    /// Rewinds the slot's session to before the invocation of its `nth` event.
    Rewind {
        slot: usize,
        nth: usize,
    },
    /// Forks `(user, sid)` at its `nth` event into `(user, to_sid)`.
    Fork {
        user: usize,
        sid: usize,
        nth: usize,
        to_sid: usize,
    },
    /// Two handles of one session, loaded together, append at the same moment.
    Race {
        user: usize,
        sid: usize,
        delta_a: Vec<(usize, usize, Option<i64>)>,
        delta_b: Vec<(usize, usize, Option<i64>)>,
    },
}

/// Mostly none, sometimes a key or two of any scope, sometimes one twice.
fn deletions() -> impl Strategy<Value = Vec<(usize, usize)>> {
    prop_oneof![
        3 => Just(Vec::new()),
        1 => prop::collection::vec((0..SCOPES.len(), 0..NAMES.len()), 1..3),
    ]
}

pub(super) fn ops() -> impl Strategy<Value = Vec<Op>> {
    let entries = || prop::collection::vec((0..SCOPES.len(), 0..NAMES.len(), prop::option::of(-2i64..3)), 0..4);
    let id = prop_oneof![
        6 => Just(IdChoice::Fresh),
        2 => Just(IdChoice::Empty),
        1 => Just(IdChoice::RetryLast),
        1 => Just(IdChoice::ReuseWithOtherContent)
    ];
    let op = prop_oneof![
        2 => (0..USERS.len(), 0..SIDS.len(), entries()).prop_map(|(user, sid, state)| Op::Create { user, sid, state }),
        3 => (0..SLOTS, 0..USERS.len(), 0..SIDS.len()).prop_map(|(slot, user, sid)| Op::Load { slot, user, sid }),
        5 => (0..SLOTS, entries(), deletions(), -3i64..4, prop::bool::weighted(0.1), id).prop_map(
            |(slot, delta, deleted, offset_micros, partial, id)| Op::Append {
                slot,
                delta,
                deleted,
                offset_micros,
                partial,
                id
            }
        ),
        1 => (0..USERS.len(), 0..SIDS.len(), prop::option::of(0usize..4), prop::option::of(0usize..4))
            .prop_map(|(user, sid, recent, after_nth_newest)| Op::Get { user, sid, recent, after_nth_newest }),
        1 => (0..USERS.len(), 0..SIDS.len()).prop_map(|(user, sid)| Op::Delete { user, sid }),
        1 => (prop::option::of(0..USERS.len()), prop::option::of(1usize..4))
            .prop_map(|(user, page_size)| Op::List { user, page_size }),
        2 => (0..USERS.len(), 0..SIDS.len(), entries(), entries())
            .prop_map(|(user, sid, delta_a, delta_b)| Op::Race { user, sid, delta_a, delta_b }),
        2 => (0..USERS.len(), 0..SIDS.len(), 0usize..8).prop_map(|(user, sid, nth)| Op::History { user, sid, nth }),
        1 => (0..SLOTS, 0usize..8).prop_map(|(slot, nth)| Op::Rewind { slot, nth }),
        1 => (0..USERS.len(), 0..SIDS.len(), 0usize..8, 0..SIDS.len())
            .prop_map(|(user, sid, nth, to_sid)| Op::Fork { user, sid, nth, to_sid }),
    ];
    prop::collection::vec(op, 1..40)
}
