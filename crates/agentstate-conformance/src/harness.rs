//! What a case runs against: a service over the backend's store, on one of the wrapper stacks the
//! server can build, with a clock the case moves.

use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use agentstate::clock::ManualClock;
use agentstate::crypt::{EncryptedStore, KeyRing};
use agentstate::store::SessionStore;
use agentstate::{Policies, SessionService};

/// Keys for the runs through encryption at rest: a rotation in progress (new writes with `k2`,
/// `k1` still read).
pub const TEST_KEYS: &str =
    "k2:c2Vjb25kIHRlc3Qga2V5IGZvciBhZ2VudHN0YXRlISE=,k1:Zmlyc3QgdGVzdCBrZXkgZm9yIGFnZW50c3RhdGUhISE=";

/// How long a session lives by default on the stacks that refresh on append (the policy needs a
/// time to live to move expire times to).
pub const REFRESH_TTL: Duration = Duration::from_secs(30 * 86_400);

/// A future of a store, as a backend's factory returns it.
pub type StoreFuture = Pin<Box<dyn Future<Output = Arc<dyn SessionStore>>>>;

/// The wrapper stacks `agentstate serve` can build over a store, each run through the whole
/// suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    /// The store as it is.
    Plain,
    /// Behind encryption at rest ([`TEST_KEYS`]).
    Encrypted,
    /// With the refresh-on-append policy (and a default time to live, [`REFRESH_TTL`]).
    Refresh,
    /// Both.
    EncryptedRefresh,
}

impl Stack {
    fn encrypted(self) -> bool {
        matches!(self, Self::Encrypted | Self::EncryptedRefresh)
    }

    fn refreshes(self) -> bool {
        matches!(self, Self::Refresh | Self::EncryptedRefresh)
    }

    /// The policies of the stack.
    pub fn policies(self) -> Policies {
        match self.refreshes() {
            true => Policies { default_ttl: Some(REFRESH_TTL), refresh_ttl_on_append: true, ..Policies::default() },
            false => Policies::default(),
        }
    }
}

/// A service on a stack, with the clock it reads. Dereferences to the service.
#[derive(Debug, Clone)]
pub struct Harness {
    service: SessionService,
    clock: ManualClock,
    stack: Stack,
}

impl Deref for Harness {
    type Target = SessionService;

    fn deref(&self) -> &SessionService {
        &self.service
    }
}

impl Harness {
    /// The service over the store `factory` makes for `clock`, on `stack`.
    pub async fn new<F, FF>(factory: F, stack: Stack) -> Self
    where
        F: FnOnce(ManualClock) -> FF,
        FF: Future<Output = Arc<dyn SessionStore>>,
    {
        let clock = ManualClock::new();
        let store = factory(clock.clone()).await;
        let store: Arc<dyn SessionStore> = match stack.encrypted() {
            true => {
                let keys = KeyRing::parse(TEST_KEYS).expect("the test keys parse");
                Arc::new(EncryptedStore::open(store, keys).await.expect("the store takes the test keys"))
            }
            false => store,
        };
        let service = SessionService::builder(store)
            .clock(clock.clone())
            .policies(stack.policies())
            .build()
            .expect("the stack can be built over the store");
        Self { service, clock, stack }
    }

    /// The service.
    pub fn service(&self) -> &SessionService {
        &self.service
    }

    /// The clock the service reads, to move.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The stack.
    pub fn stack(&self) -> Stack {
        self.stack
    }

    /// The service's time, epoch seconds.
    pub fn now_secs(&self) -> f64 {
        agentstate::store::micros_to_secs(self.service.now_micros())
    }

    /// Moves the clock past the expiry of a session that expires `ttl` after its creation or (on
    /// the stacks that refresh on append) its last append.
    pub fn outlive(&self, ttl: Duration) {
        let refreshed = if self.stack.refreshes() { REFRESH_TTL } else { Duration::ZERO };
        self.clock.advance(ttl.max(refreshed) + Duration::from_secs(1));
    }

    /// Whether the store keeps history (its own or a remote service's).
    pub fn keeps_history(&self) -> bool {
        self.service.capabilities().answers_history()
    }

    /// Answers a history question the way a store without history must: `Unsupported`, and
    /// `None` to say there is nothing more to check; with history, the answer.
    pub fn history<T: std::fmt::Debug>(&self, answer: agentstate::Result<T>) -> Option<T> {
        if self.keeps_history() {
            return Some(answer.expect("a history answer"));
        }
        let kind = answer.expect_err("a store without history refuses history questions").kind();
        assert_eq!(kind, agentstate::ErrorKind::Unsupported);
        None
    }

    /// The expire time a session created now without one gets (epoch µs).
    pub fn default_expiry(&self) -> Option<i64> {
        self.stack.refreshes().then(|| self.service.expire_after(REFRESH_TTL))
    }
}

/// Runs `body` on a fresh two-worker runtime (real parallelism for the concurrency cases).
pub(crate) fn block_on<T>(body: impl Future<Output = T>) -> T {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime");
    runtime.block_on(body)
}
