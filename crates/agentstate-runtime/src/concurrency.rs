//! Runs of one session taking turns: what happens when a user sends a second message while the
//! first is still being answered ("double texting").
//!
//! Every run takes its session's lease ([`agentstate::store::LeaseStore`]) before it loads the
//! session, renews it while it runs and gives it back when it ends. The lease lives in the store
//! when the store keeps leases (every agentstate backend but the managed service), so runs on
//! several servers over one database take turns; a server that crashes mid-run holds the session
//! for at most the lease's time to live. Within one process, runs waiting for a session queue in
//! arrival order. What a run does when the lease is taken is the [`DoubleTexting`] policy.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentstate::store::{LeaseRequest, LeaseState};
use agentstate::{SessionKey, SessionService};
use tokio::sync::OwnedMutexGuard;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::RuntimeError;

/// What a run does when another run of its session is still going.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DoubleTexting {
    /// Fails at once with [`RuntimeError::SessionBusy`] (409 over HTTP); nothing of it is stored.
    Reject,
    /// Waits for the runs before it to end, then runs on the state they left. The default.
    #[default]
    Enqueue,
    /// Asks the running one to stop: it stops at its next event boundary (what it stored stays,
    /// and its last event is marked `interrupted`); then this one runs.
    Interrupt,
}

impl DoubleTexting {
    /// Every policy, by name.
    pub const ALL: [DoubleTexting; 3] = [DoubleTexting::Reject, DoubleTexting::Enqueue, DoubleTexting::Interrupt];

    /// Its name: `reject`, `enqueue` or `interrupt`.
    pub fn name(self) -> &'static str {
        match self {
            DoubleTexting::Reject => "reject",
            DoubleTexting::Enqueue => "enqueue",
            DoubleTexting::Interrupt => "interrupt",
        }
    }
}

impl fmt::Display for DoubleTexting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DoubleTexting {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| format!("unknown double-texting policy {name:?}: expected reject, enqueue or interrupt"))
    }
}

/// How runs of one session take turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConcurrency {
    /// What a run does when another is going.
    pub policy: DoubleTexting,
    /// How long a lease lasts unless renewed: the longest a crashed server holds a session. A
    /// running run renews it every quarter of this (at most every half second, which is also how
    /// soon it sees an interruption).
    pub lease_ttl: Duration,
    /// At most this many runs of one session wait in this process (besides the one running);
    /// the next is refused with [`RuntimeError::RunNotQueued`].
    pub max_queued: usize,
    /// The longest a run waits for its turn before it is refused with
    /// [`RuntimeError::RunNotQueued`].
    pub max_wait: Duration,
}

impl Default for RunConcurrency {
    fn default() -> Self {
        Self {
            policy: DoubleTexting::Enqueue,
            lease_ttl: Duration::from_secs(30),
            max_queued: 8,
            max_wait: Duration::from_secs(300),
        }
    }
}

impl RunConcurrency {
    fn renew_every(&self) -> Duration {
        (self.lease_ttl / 4).clamp(Duration::from_millis(10), Duration::from_millis(500))
    }

    /// `holder`'s request for `key`'s lease now, for a lease's time to live.
    fn lease_request(&self, service: &SessionService, key: &SessionKey, holder: &str) -> LeaseRequest {
        let now_micros = service.now_micros();
        let ttl_micros = i64::try_from(self.lease_ttl.as_micros()).unwrap_or(i64::MAX);
        LeaseRequest {
            key: key.clone(),
            holder: holder.to_owned(),
            now_micros,
            until_micros: now_micros.saturating_add(ttl_micros),
        }
    }
}

/// The runs of each session in this process, holding or waiting for its turn (in arrival order:
/// tokio's mutex is fair).
#[derive(Debug, Default)]
pub(crate) struct Turns {
    sessions: Mutex<HashMap<SessionKey, Arc<Turn>>>,
}

#[derive(Debug, Default)]
struct Turn {
    /// Runs of the session in this process, running or waiting.
    runs: AtomicUsize,
    /// Those of them not running yet.
    waiting: AtomicUsize,
    gate: Arc<tokio::sync::Mutex<()>>,
}

/// A run's place among its session's runs in this process; leaving drops the session's entry
/// when it was the last.
struct Ticket {
    turns: Arc<Turns>,
    key: SessionKey,
    turn: Arc<Turn>,
    waiting: bool,
}

impl Ticket {
    /// The run holds the session: it no longer waits.
    fn started(&mut self) {
        if std::mem::take(&mut self.waiting) {
            self.turn.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Turns {
    fn enter(self: &Arc<Self>, key: &SessionKey, max_queued: usize) -> Result<Ticket, RuntimeError> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let turn = Arc::clone(sessions.entry(key.clone()).or_default());
        // Under the map's lock: counted and checked together.
        if turn.waiting.load(Ordering::SeqCst) >= max_queued {
            if turn.runs.load(Ordering::SeqCst) == 0 {
                sessions.remove(key);
            }
            return Err(RuntimeError::RunNotQueued {
                session_id: key.session_id().to_owned(),
                reason: format!("{max_queued} more already wait for their turn here"),
            });
        }
        turn.runs.fetch_add(1, Ordering::SeqCst);
        turn.waiting.fetch_add(1, Ordering::SeqCst);
        Ok(Ticket { turns: Arc::clone(self), key: key.clone(), turn, waiting: true })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.started();
        let mut sessions = self.turns.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if self.turn.runs.fetch_sub(1, Ordering::SeqCst) == 1 {
            sessions.remove(&self.key);
        }
    }
}

/// A run's hold on its session: the lease in the store, renewed in the background, and its turn
/// in this process. [`release`](Self::release) gives both back; dropping it (a run cancelled)
/// gives the lease back from a task of its own.
pub(crate) struct RunLease {
    service: SessionService,
    key: SessionKey,
    holder: String,
    stop: Arc<AtomicBool>,
    heartbeat: JoinHandle<()>,
    released: bool,
    _gate: OwnedMutexGuard<()>,
    _ticket: Ticket,
}

impl RunLease {
    /// Waits for (or, by the policy, refuses or interrupts) the runs ahead, then holds the
    /// session for `holder`.
    pub(crate) async fn take(
        service: &SessionService,
        turns: &Arc<Turns>,
        key: &SessionKey,
        holder: &str,
        config: &RunConcurrency,
    ) -> Result<RunLease, RuntimeError> {
        let busy = || RuntimeError::SessionBusy(key.session_id().to_owned());
        let waited_too_long = || RuntimeError::RunNotQueued {
            session_id: key.session_id().to_owned(),
            reason: format!("this one waited {:?}, as long as allowed", config.max_wait),
        };
        let mut ticket = turns.enter(key, config.max_queued)?;
        let deadline = Instant::now() + config.max_wait;
        let gate = Arc::clone(&ticket.turn.gate);
        let gate = match config.policy {
            DoubleTexting::Reject => gate.try_lock_owned().map_err(|_| busy())?,
            DoubleTexting::Enqueue => {
                tokio::time::timeout_at(deadline, gate.lock_owned()).await.map_err(|_| waited_too_long())?
            }
            DoubleTexting::Interrupt => {
                service.leases().interrupt_lease(key, service.now_micros()).await?;
                tokio::time::timeout_at(deadline, gate.lock_owned()).await.map_err(|_| waited_too_long())?
            }
        };
        let mut interrupted: Option<String> = None;
        let mut pause = Duration::from_millis(10);
        loop {
            let request = config.lease_request(service, key, holder);
            match service.leases().acquire_lease(&request).await? {
                LeaseState::Held { .. } => break,
                LeaseState::Busy { holder: other, .. } => match config.policy {
                    DoubleTexting::Reject => return Err(busy()),
                    // A run of another server (or one that took the lease since): ask it too.
                    DoubleTexting::Interrupt if interrupted.as_deref() != Some(other.as_str()) => {
                        service.leases().interrupt_lease(key, request.now_micros).await?;
                        interrupted = Some(other);
                    }
                    _ => {}
                },
            }
            if Instant::now() + pause > deadline {
                return Err(waited_too_long());
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
        ticket.started();
        let stop = Arc::new(AtomicBool::new(false));
        let heartbeat =
            tokio::spawn(renew(service.clone(), key.clone(), holder.to_owned(), config.clone(), Arc::clone(&stop)));
        Ok(RunLease {
            service: service.clone(),
            key: key.clone(),
            holder: holder.to_owned(),
            stop,
            heartbeat,
            released: false,
            _gate: gate,
            _ticket: ticket,
        })
    }

    /// Set once another run asked this one to stop, or the lease was lost.
    pub(crate) fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Gives the lease back, then the turn.
    pub(crate) async fn release(mut self) {
        self.heartbeat.abort();
        self.released = true;
        if let Err(error) = self.service.leases().release_lease(&self.key, &self.holder).await {
            // It lapses by itself.
            tracing::warn!(%error, session = %self.key, "giving a run lease back failed");
        }
    }
}

impl Drop for RunLease {
    fn drop(&mut self) {
        self.heartbeat.abort();
        if self.released {
            return;
        }
        let (service, key, holder) = (self.service.clone(), self.key.clone(), self.holder.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = service.leases().release_lease(&key, &holder).await {
                    tracing::warn!(%error, session = %key, "giving a cancelled run's lease back failed");
                }
            });
        }
    }
}

/// Renews the lease while the run goes; raises `stop` when another run asks it to stop or took
/// the lease (after this server could not renew it in time).
async fn renew(
    service: SessionService,
    key: SessionKey,
    holder: String,
    config: RunConcurrency,
    stop: Arc<AtomicBool>,
) {
    loop {
        tokio::time::sleep(config.renew_every()).await;
        match service.leases().acquire_lease(&config.lease_request(&service, &key, &holder)).await {
            Ok(LeaseState::Held { interrupt_requested: false }) => {}
            Ok(LeaseState::Held { interrupt_requested: true }) | Ok(LeaseState::Busy { .. }) => {
                stop.store(true, Ordering::SeqCst);
            }
            Err(error) => tracing::warn!(%error, session = %key, "renewing a run lease failed; trying again"),
        }
    }
}
