//! Key names. Everything of one app shares a Redis Cluster hash slot (the app name is the hash
//! tag), because a commit writes the app's state, the user's state and the session's keys in one
//! script, and a script may only touch keys of one slot.
//!
//! ```text
//! {prefix}{app}:app                 hash   app state: key → JSON
//! {prefix}{app}:u:{user}            hash   user state: key → JSON
//! {prefix}{app}:m:{user}:{session}  hash   create, update (the marker, µs), name, labels, expire
//! {prefix}{app}:s:{user}:{session}  hash   session state: key → JSON
//! {prefix}{app}:e:{user}:{session}  zset   event id, scored by its time (µs)
//! {prefix}{app}:d:{user}:{session}  hash   event id → event JSON
//! {prefix}{app}:i:{user}:{session}  hash   invocation id → its first event's id
//! {prefix}{app}:f:{user}:{session}  hash   event id → what the compacted view needs of it:
//!                                    `[invocation id, facts]` (see `agentstate::compaction`)
//! {prefix}{app}:h:{user}:{session}  zset   history snapshot (event id; '' at creation) by time
//! {prefix}{app}:hd:{user}:{session} hash   history snapshot → state JSON
//! {prefix}{app}:sessions            zset   "{user}\0{session}" by last update (µs)
//! {prefix}{app}:us:{user}           zset   the user's session ids by last update (µs)
//! {prefix}{app}:created             zset   "{user}\0{session}" by creation (µs)
//! {prefix}{app}:uc:{user}           zset   the user's session ids by creation (µs)
//! {prefix}{app}:id:{session}        set    the users that have a session with this id
//! {prefix}{app}:expiring            zset   "{user}\0{session}" of expiring sessions by expire time
//! {prefix}{app}:users               set    the app's users
//! {prefix}{app}:l:{user}            hash   run leases: session id → "{until µs} {interruptions} {holder}"
//! {prefix}{app}:w:{user}            zset   the user's state writes without a session, by time (µs)
//! {prefix}{app}:w                   zset   the app's state writes without a session, by time (µs)
//! {prefix}{app}:av:{user}:{session}:{name}  hash  an artifact: n (versions), m:{v} (its metadata
//!                                    JSON), d:{v} (its payload); session '' for a user: name
//! {prefix}{app}:an:{user}:{session}  zset   the names of a session's artifacts (all scored 0)
//! {prefix}{app}:as:{user}            set    the user's sessions that have artifacts ('' too)
//! {prefix}apps                      set    the apps
//! {prefix}expiring-apps             set    the apps that have had expiring sessions (for the sweep)
//! {prefix}meta:{name}               string the store's metadata (encryption at rest's key checks)
//! ```
//!
//! An expiring session's own keys carry its expire time (`PEXPIREAT`), so Redis removes them by
//! itself; the sweep removes its list entries.
//!
//! `{app}` is the app name in braces (the hash tag); app, user and session names are written
//! with `%`, `:`, `{` and `}` percent-encoded, so no two sessions share a key and the tag is
//! always the whole app name. Ids never hold control characters, so `\0` separates the user
//! from the session in list members, and byte order of members is the order of (user, session).

use agentstate::SessionKey;

/// Percent-encodes the characters that structure key names.
fn escape(part: &str, out: &mut String) {
    for c in part.chars() {
        match c {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
}

/// The keys of one app.
#[derive(Debug, Clone)]
pub(crate) struct AppKeys {
    /// `{prefix}{app}:`
    base: String,
}

impl AppKeys {
    pub(crate) fn new(prefix: &str, app: &str) -> Self {
        let mut base = String::with_capacity(prefix.len() + app.len() + 4);
        base.push_str(prefix);
        base.push('{');
        escape(app, &mut base);
        base.push_str("}:");
        Self { base }
    }

    fn key(&self, kind: &str, parts: &[&str]) -> String {
        let mut key = self.base.clone();
        key.push_str(kind);
        for part in parts {
            key.push(':');
            escape(part, &mut key);
        }
        key
    }

    /// App state.
    pub(crate) fn app_state(&self) -> String {
        self.key("app", &[])
    }

    /// A user's state.
    pub(crate) fn user_state(&self, user: &str) -> String {
        self.key("u", &[user])
    }

    /// Every session of the app, by last update.
    pub(crate) fn sessions(&self) -> String {
        self.key("sessions", &[])
    }

    /// A user's sessions, by last update.
    pub(crate) fn user_sessions(&self, user: &str) -> String {
        self.key("us", &[user])
    }

    /// Every session of the app, by creation.
    pub(crate) fn created(&self) -> String {
        self.key("created", &[])
    }

    /// A user's sessions, by creation.
    pub(crate) fn user_created(&self, user: &str) -> String {
        self.key("uc", &[user])
    }

    /// The app's sessions that expire, by expire time (µs), for the sweep.
    pub(crate) fn expiring(&self) -> String {
        self.key("expiring", &[])
    }

    /// The log of an owner's state writes without a session: the app's (`None`) or a user's.
    pub(crate) fn state_writes(&self, user: Option<&str>) -> String {
        match user {
            Some(user) => self.key("w", &[user]),
            None => self.key("w", &[]),
        }
    }

    /// A user's run leases.
    pub(crate) fn leases(&self, user: &str) -> String {
        self.key("l", &[user])
    }

    /// The users of the app (with sessions or state).
    pub(crate) fn users(&self) -> String {
        self.key("users", &[])
    }

    /// The users that have a session called `session`.
    pub(crate) fn users_with(&self, session: &str) -> String {
        self.key("id", &[session])
    }

    /// The keys of one session.
    pub(crate) fn session(&self, user: &str, session: &str) -> SessionKeys {
        let key = |kind| self.key(kind, &[user, session]);
        SessionKeys {
            meta: key("m"),
            state: key("s"),
            times: key("e"),
            data: key("d"),
            invocations: key("i"),
            facts: key("f"),
            snapshots: key("h"),
            snapshot_states: key("hd"),
            app_state: self.app_state(),
            user_state: self.user_state(user),
            sessions: self.sessions(),
            user_sessions: self.user_sessions(user),
            created: self.created(),
            user_created: self.user_created(user),
            users_with: self.users_with(session),
            expiring: self.expiring(),
            member: list_member(user, session),
        }
    }
}

impl AppKeys {
    /// `{prefix}{app}:`, under which the memory scripts name an owner's keys (see
    /// `lua/memory_lib.lua`).
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// An owner's memories in create order (the key that routes the memory scripts).
    pub(crate) fn memory_order(&self, user: &str) -> String {
        self.key("mo", &[user])
    }

    /// The app's expiring memories, `"{user}\0{member}"` by expire time, for the sweep.
    pub(crate) fn expiring_memories(&self) -> String {
        self.key("memx", &[])
    }

    /// An artifact's versions (see `lua/artifact_lib.lua`).
    pub(crate) fn artifact(&self, user: &str, session: &str, name: &str) -> String {
        self.key("av", &[user, session, name])
    }

    /// The names of a session's artifacts (`""`: the user's user-scoped ones).
    pub(crate) fn artifact_names(&self, user: &str, session: &str) -> String {
        self.key("an", &[user, session])
    }

    /// The user's sessions that have artifacts.
    pub(crate) fn artifact_sessions(&self, user: &str) -> String {
        self.key("as", &[user])
    }

    /// The users of the app holding memories (a sorted set, all scored 0: byte order).
    pub(crate) fn memory_users(&self) -> String {
        self.key("mu", &[])
    }
}

/// A name part as key names hold it (`%`, `:`, `{`, `}` percent-encoded).
pub(crate) fn escaped(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    escape(part, &mut out);
    out
}

/// The apps that have memories (a key of its own slot, outside every app's), for the sweep and
/// re-encryption.
pub(crate) fn memory_apps(prefix: &str) -> String {
    format!("{prefix}memory-apps")
}

/// Every app (a key of its own slot, outside every app's).
pub(crate) fn apps(prefix: &str) -> String {
    format!("{prefix}apps")
}

/// The apps that have had expiring sessions (a key of its own slot, outside every app's).
pub(crate) fn expiring_apps(prefix: &str) -> String {
    format!("{prefix}expiring-apps")
}

/// A session's member of the app's list: `user\0session`.
pub(crate) fn list_member(user: &str, session: &str) -> String {
    let mut member = String::with_capacity(user.len() + session.len() + 1);
    member.push_str(user);
    member.push('\0');
    member.push_str(session);
    member
}

/// Every key a session's operations touch.
#[derive(Debug, Clone)]
pub(crate) struct SessionKeys {
    pub(crate) meta: String,
    pub(crate) state: String,
    pub(crate) times: String,
    pub(crate) data: String,
    pub(crate) invocations: String,
    pub(crate) facts: String,
    pub(crate) snapshots: String,
    pub(crate) snapshot_states: String,
    pub(crate) app_state: String,
    pub(crate) user_state: String,
    pub(crate) sessions: String,
    pub(crate) user_sessions: String,
    pub(crate) created: String,
    pub(crate) user_created: String,
    pub(crate) users_with: String,
    pub(crate) expiring: String,
    pub(crate) member: String,
}

impl SessionKeys {
    pub(crate) fn of(prefix: &str, key: &SessionKey) -> Self {
        AppKeys::new(prefix, key.app_name()).session(key.user_id(), key.session_id())
    }

    /// An invocation of a script that removes the session (`sweep.lua`, `erase.lua`): its own
    /// keys, then the lists it is in, and the arguments they share (list member, session id,
    /// user id).
    pub(crate) fn removal<'s>(
        &self,
        script: &'s redis::Script,
        user: &str,
        session: &str,
    ) -> redis::ScriptInvocation<'s> {
        let mut invocation = script.prepare_invoke();
        for key in self.own() {
            invocation.key(key);
        }
        invocation
            .key(&self.sessions)
            .key(&self.user_sessions)
            .key(&self.users_with)
            .key(&self.expiring)
            .key(&self.created)
            .key(&self.user_created)
            .arg(&self.member)
            .arg(session)
            .arg(user);
        invocation
    }

    /// The keys that hold the session itself (not the lists it is in).
    pub(crate) fn own(&self) -> [&str; 8] {
        [
            &self.meta,
            &self.state,
            &self.times,
            &self.data,
            &self.invocations,
            &self.snapshots,
            &self.snapshot_states,
            &self.facts,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unambiguous_and_share_the_apps_slot() {
        let a = AppKeys::new("p:", "my{app}").session("a:b", "c");
        let b = AppKeys::new("p:", "my{app}").session("a", "b:c");
        assert_ne!(a.meta, b.meta);
        assert_eq!(a.meta, "p:{my%7Bapp%7D}:m:a%3Ab:c");
        for key in a.own().iter().chain([&a.app_state.as_str(), &a.sessions.as_str()]) {
            assert!(key.starts_with("p:{my%7Bapp%7D}:"), "{key}");
        }
        assert!(list_member("a", "b") < list_member("a", "b0"));
        assert!(list_member("a", "zz") < list_member("ab", "a"));
    }
}
