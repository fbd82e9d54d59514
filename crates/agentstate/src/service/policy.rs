//! [`Policies`]: how long sessions live and how much history they keep, applied by the service
//! to every store alike.

use std::collections::BTreeMap;
use std::time::Duration;

use super::requests::Retention;

/// The service's lifecycle policies.
///
/// ```
/// use std::time::Duration;
/// use agentstate::Policies;
/// let policies = Policies { default_ttl: Some(Duration::from_secs(86_400)), ..Policies::default() }
///     .app_ttl("support_bot", Duration::from_secs(3_600));
/// assert_eq!(policies.ttl_for("support_bot"), Some(Duration::from_secs(3_600)));
/// assert_eq!(policies.ttl_for("other"), Some(Duration::from_secs(86_400)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policies {
    /// How long a session created without a time to live or expire time lives; `None`: for
    /// ever.
    pub default_ttl: Option<Duration>,
    /// Per-app defaults, over `default_ttl`.
    pub app_ttls: BTreeMap<String, Duration>,
    /// Sessions in use live on: after every append, a session that expires gets its expire time
    /// moved to now plus its app's time to live (when that is later), in the append's own
    /// atomic step.
    pub refresh_ttl_on_append: bool,
    /// Per-app retention policies, which a sweep applies to every session of the app.
    pub retention: BTreeMap<String, Retention>,
}

impl Policies {
    /// Sets `app`'s default time to live.
    #[must_use]
    pub fn app_ttl(mut self, app: impl Into<String>, ttl: Duration) -> Self {
        self.app_ttls.insert(app.into(), ttl);
        self
    }

    /// The default time to live of `app`'s sessions.
    pub fn ttl_for(&self, app: &str) -> Option<Duration> {
        self.app_ttls.get(app).copied().or(self.default_ttl)
    }
}
