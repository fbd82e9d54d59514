//! The SQLite writer: one write connection, and group commit. Every write queued while a commit
//! runs goes into the next transaction together (up to [`MAX_BATCH`]), each job in a savepoint of
//! its own, so a failing job undoes only itself; no job is acknowledged before its COMMIT
//! returned: an acknowledged append survives a crash of the process (and, with
//! `synchronous=FULL`, of the machine).
//!
//! Batches run on a thread of their own. When commits are cheap (`synchronous=NORMAL`, or an
//! in-memory database: no fsync) and the writer is idle, a write runs on the caller's thread
//! instead: a lone writer pays no hop to the thread and back, which costs as much as the commit
//! itself. Writes that arrive meanwhile queue up and go to the thread as one batch, as before.
//! A write on the caller's thread never waits for another process's lock (it moves to the
//! thread, which does) nor runs a checkpoint: SQLite's automatic checkpoint, which would run
//! inside a commit, is replaced by one the thread runs on the write connection between
//! transactions once the log has grown, before the next write (so the log starts over).
//!
//! `BEGIN IMMEDIATE` takes SQLite's write lock before any read, so the checks a job makes (stale
//! marker, duplicate id) and its writes are atomic, across processes too.

use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::thread;
use std::time::Duration;

use agentstate::{Error, Result};
use rusqlite::Connection;
use tokio::sync::oneshot;

use super::sqlite_error;

/// Runs after the batch's COMMIT with its outcome; delivers the job's result (or the commit's
/// error) to the waiting caller.
type Completion = Box<dyn FnOnce(Option<&rusqlite::Error>) + Send>;
/// A write: runs inside the batch transaction (or gets the error that kept the transaction from
/// starting), says whether it succeeded (else its savepoint is rolled back) and how to answer its
/// caller once the batch is committed.
type WriteJob = Box<dyn FnOnce(Result<&Connection, &rusqlite::Error>) -> (bool, Completion) + Send>;
/// A read, for databases without a separate read path (`:memory:`).
type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

enum Job {
    Write(WriteJob),
    Read(ReadJob),
}

/// Most jobs committed together; bounds the latency a large burst adds to its first job.
const MAX_BATCH: usize = 512;
/// Log pages after which the thread checkpoints (SQLite's default for its automatic one).
const CHECKPOINT_PAGES: i32 = 1000;

/// How the writer is set up.
#[derive(Debug, Clone)]
pub(crate) struct WriterOptions {
    /// Whether a write may run on its caller's thread when the writer is idle: only where a
    /// commit does not wait for the disk.
    pub(crate) inline: bool,
    /// How long the thread waits for another process's write lock.
    pub(crate) busy_timeout: Duration,
    /// Whether the database has a write-ahead log to checkpoint (a file, not memory).
    pub(crate) wal: bool,
}

/// The connection, when no one is using it, and the jobs waiting for it.
struct State {
    idle: Option<Connection>,
    queue: VecDeque<Job>,
    /// The log has grown past [`CHECKPOINT_PAGES`]: the thread checkpoints before the next write.
    checkpoint_due: bool,
}

/// Asks the thread to run the queue (and a due checkpoint).
struct Drain;

struct Shared {
    state: Mutex<State>,
    signals: mpsc::Sender<Drain>,
    options: WriterOptions,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn signal(&self) -> bool {
        self.signals.send(Drain).is_ok()
    }

    /// Puts the connection back; if jobs queued up meanwhile or a checkpoint is due, the thread
    /// takes over.
    fn give_back(&self, conn: Connection) {
        let mut state = self.lock();
        state.idle = Some(conn);
        state.checkpoint_due |= WAL_PAGES.replace(0) >= CHECKPOINT_PAGES;
        let waiting = !state.queue.is_empty() || state.checkpoint_due;
        drop(state);
        if waiting {
            self.signal();
        }
    }
}

/// Handle to the writer. Dropping every clone stops its thread once the queue is empty.
#[derive(Clone)]
pub(crate) struct Writer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("options", &self.shared.options).finish_non_exhaustive()
    }
}

thread_local! {
    /// The log's size in pages after the last commit on this thread, as SQLite reports it.
    static WAL_PAGES: Cell<i32> = const { Cell::new(0) };
}

fn note_wal_pages(_: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_PAGES.set(pages);
    Ok(())
}

impl Writer {
    /// Starts the writer on `conn`.
    pub(crate) fn spawn(conn: Connection, options: WriterOptions) -> Result<Self> {
        if options.wal {
            // Replaces the automatic checkpoint, which would run inside a commit, perhaps on a
            // caller's thread.
            conn.wal_hook(Some(note_wal_pages));
        }
        if options.inline {
            // Idle, the connection is for callers' threads, which never wait (see `drain`).
            conn.busy_timeout(Duration::ZERO).map_err(|e| sqlite_error("configure the writer", &e))?;
        }
        let (signals, received) = mpsc::channel();
        let state = State { idle: Some(conn), queue: VecDeque::new(), checkpoint_due: false };
        let shared = Arc::new(Shared { state: Mutex::new(state), signals, options });
        let weak = Arc::downgrade(&shared);
        thread::Builder::new()
            .name("agentstate-sqlite-writer".into())
            .spawn(move || run(&weak, &received))
            .map_err(|e| Error::backend("cannot start the SQLite writer thread", false, e))?;
        Ok(Self { shared })
    }

    /// Runs `f` in a transaction; resolves once that transaction committed.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: WriteJob = Box::new(move |conn| {
            let result = conn.map_err(|e| sqlite_error("write transaction", e)).and_then(f);
            let ok = result.is_ok();
            let complete: Completion = Box::new(move |commit_error| {
                let outcome = match commit_error {
                    Some(e) => Err(sqlite_error("write transaction", e)),
                    None => result,
                };
                let _ = reply.send(outcome);
            });
            (ok, complete)
        });
        self.submit(Job::Write(job));
        answer.await.map_err(|_| stopped())?
    }

    /// Runs `f` on the write connection, outside any write transaction.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        self.submit(Job::Read(job));
        answer.await.map_err(|_| stopped())?
    }

    /// Runs `job` here if the writer is idle and may, else queues it for the thread.
    fn submit(&self, job: Job) {
        let shared = &self.shared;
        let mut state = shared.lock();
        if shared.options.inline
            && state.queue.is_empty()
            && !state.checkpoint_due
            && let Some(conn) = state.idle.take()
        {
            drop(state);
            let conn = Lent { conn: Some(conn), shared };
            let job = match job {
                Job::Read(read) => return run_read(read, conn.get()),
                Job::Write(write) => match commit_batch(conn.get(), vec![write], Begin::NoWait) {
                    Ok(()) => return,
                    // Another process holds the write lock: the thread waits for it.
                    Err(mut busy) => busy.pop().map(Job::Write),
                },
            };
            drop(conn);
            state = shared.lock();
            state.queue.extend(job);
        } else {
            state.queue.push_back(job);
        }
        let idle = state.idle.is_some();
        drop(state);
        // A thread that has stopped drops the queue with it, so the caller hears of it.
        if idle && !shared.signal() {
            shared.lock().queue.clear();
        }
    }
}

/// The connection, taken from the state for a write on the caller's thread; back when dropped,
/// even by a panic (after rolling back what it left open).
struct Lent<'a> {
    conn: Option<Connection>,
    shared: &'a Shared,
}

impl Lent<'_> {
    fn get(&self) -> &Connection {
        // Only `drop` takes it.
        self.conn.as_ref().unwrap_or_else(|| unreachable!("the lent connection is held until dropped"))
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            self.shared.give_back(conn);
        }
    }
}

/// The answer when a job's reply was dropped unsent: it panicked, or the thread stopped.
fn stopped() -> Error {
    Error::Backend {
        message: "the SQLite writer dropped the request (it panicked, or its thread stopped)".into(),
        retryable: false,
        source: None,
    }
}

/// The thread: runs the queue whenever asked. Stops when the last handle is gone.
fn run(shared: &std::sync::Weak<Shared>, signals: &mpsc::Receiver<Drain>) {
    while let Ok(Drain) = signals.recv() {
        let Some(shared) = shared.upgrade() else { return };
        drain(&shared);
    }
}

/// Checkpoints if due, then runs queued jobs, a batch at a time, until the queue is empty; then
/// the connection is idle again. Nothing to do if a caller holds it (it hands over when done).
fn drain(shared: &Shared) {
    let mut state = shared.lock();
    let Some(conn) = state.idle.take() else { return };
    let conn = Lent { conn: Some(conn), shared };
    let options = &shared.options;
    if options.inline {
        // The thread waits for another process's lock, where a caller's thread does not.
        let _ = conn.get().busy_timeout(options.busy_timeout);
    }
    loop {
        if std::mem::take(&mut state.checkpoint_due) {
            drop(state);
            checkpoint(conn.get());
            state = shared.lock();
        }
        let take = state.queue.len().min(MAX_BATCH);
        let jobs: Vec<Job> = state.queue.drain(..take).collect();
        drop(state);
        if jobs.is_empty() {
            break;
        }
        let mut writes = Vec::new();
        for job in jobs {
            match job {
                Job::Read(read) => run_read(read, conn.get()),
                Job::Write(write) => writes.push(write),
            }
        }
        if !writes.is_empty() {
            // `Begin::Wait` gives nothing back.
            let _ = commit_batch(conn.get(), writes, Begin::Wait);
        }
        state = shared.lock();
        state.checkpoint_due |= WAL_PAGES.replace(0) >= CHECKPOINT_PAGES;
    }
    if options.inline {
        let _ = conn.get().busy_timeout(Duration::ZERO);
    }
    // Back to idle; anything queued meanwhile is signalled by `give_back`.
    drop(conn);
}

fn run_read(read: ReadJob, conn: &Connection) {
    if catch_unwind(AssertUnwindSafe(|| read(conn))).is_err() {
        tracing::error!("a SQLite read panicked");
    }
}

/// Answers every job with `e`.
fn fail_all(writes: Vec<WriteJob>, e: &rusqlite::Error) {
    for write in writes {
        let (_, complete) = write(Err(e));
        complete(Some(e));
    }
}

/// A passive checkpoint on the write connection, between transactions: it never blocks the
/// readers, and does what it can past their snapshots. With no frame written after it, the next
/// write starts the log over, so it stays short.
fn checkpoint(conn: &Connection) {
    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::warn!(error = %e, "a SQLite checkpoint failed; the next one retries");
    }
}

/// How a batch starts its transaction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Begin {
    /// Waits for another process's write lock (up to the busy timeout).
    Wait,
    /// Gives the jobs back instead of waiting (the connection's busy timeout is zero).
    NoWait,
}

fn step(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Runs one job, as failed if it panicked.
fn run_job(write: WriteJob, conn: &Connection) -> (bool, Option<Completion>) {
    match catch_unwind(AssertUnwindSafe(|| write(Ok(conn)))) {
        Ok((ok, complete)) => (ok, Some(complete)),
        Err(_) => {
            tracing::error!("a SQLite write panicked; it is rolled back");
            (false, None)
        }
    }
}

/// Commits `writes` in one transaction and answers each; `Err` gives them all back, untouched,
/// when `begin` is [`Begin::NoWait`] and another process holds the write lock.
fn commit_batch(conn: &Connection, writes: Vec<WriteJob>, begin: Begin) -> std::result::Result<(), Vec<WriteJob>> {
    if let Err(e) = step(conn, "BEGIN IMMEDIATE") {
        if begin == Begin::NoWait && e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
            return Err(writes);
        }
        fail_all(writes, &e);
        return Ok(());
    }
    let mut completions = Vec::with_capacity(writes.len());
    let mut poisoned = None;
    if writes.len() == 1 {
        // Alone in its transaction: no savepoint needed; a failure rolls the transaction back.
        for write in writes {
            let (ok, complete) = run_job(write, conn);
            completions.extend(complete);
            if !ok {
                poisoned = Some(None);
            }
        }
    } else {
        // A job whose savepoint cannot be released or rolled back may have left half its writes
        // (or SQLite rolled the whole transaction back on an I/O error): then nothing is
        // committed.
        for write in writes {
            if let Some(Some(e)) = &poisoned {
                completions.push(write(Err(e)).1);
                continue;
            }
            if let Err(e) = step(conn, "SAVEPOINT job") {
                completions.push(write(Err(&e)).1);
                poisoned = Some(Some(e));
                continue;
            }
            let (ok, complete) = run_job(write, conn);
            completions.extend(complete);
            let undo = if ok { step(conn, "RELEASE job") } else { conn.execute_batch("ROLLBACK TO job; RELEASE job") };
            if let Err(e) = undo {
                poisoned = Some(Some(e));
            }
        }
    }
    let failure = match poisoned {
        // The lone job failed: it answers its own error; nothing else was written.
        Some(None) => {
            let _ = step(conn, "ROLLBACK");
            None
        }
        Some(Some(e)) => Some(e),
        None => step(conn, "COMMIT").err(),
    };
    if failure.is_some() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for complete in completions {
        complete(failure.as_ref());
    }
    Ok(())
}
