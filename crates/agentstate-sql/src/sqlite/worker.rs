//! The SQLite writer: one thread owns the write connection and commits every write queued while
//! the previous commit ran in a single transaction (group commit). Each job runs in a savepoint of
//! its own, so a failing job undoes only itself, and no job is acknowledged before its COMMIT
//! returned: an acknowledged append survives a crash of the process (and, with
//! `synchronous=FULL`, of the machine).
//!
//! `BEGIN IMMEDIATE` takes SQLite's write lock before any read, so the checks a job makes (stale
//! marker, duplicate id) and its writes are atomic, across processes too.

use std::sync::mpsc;
use std::thread;

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

/// Handle to the writer thread. Dropping every clone stops the thread after it drained its queue.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub(crate) fn spawn(conn: Connection) -> Result<Self> {
        let (jobs, queue) = mpsc::channel();
        thread::Builder::new()
            .name("agentstate-sqlite-writer".into())
            .spawn(move || run(&conn, &queue))
            .map_err(|e| Error::backend("cannot start the SQLite writer thread", false, e))?;
        Ok(Self { jobs })
    }

    /// Runs `f` in the next group-committed transaction; resolves once that transaction committed.
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
        self.send(Job::Write(job), answer).await
    }

    /// Runs `f` on the writer's connection, outside any write transaction.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        self.send(Job::Read(job), answer).await
    }

    async fn send<T>(&self, job: Job, answer: oneshot::Receiver<Result<T>>) -> Result<T> {
        let gone = || Error::Backend {
            message: "the SQLite writer thread has stopped".into(),
            retryable: false,
            source: None,
        };
        self.jobs.send(job).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

fn run(conn: &Connection, queue: &mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut writes = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Read(read) => read(conn),
                Job::Write(write) => writes.push(write),
            }
            if writes.len() < MAX_BATCH {
                next = queue.try_recv().ok();
            }
        }
        if !writes.is_empty() {
            commit_batch(conn, writes);
        }
    }
}

fn commit_batch(conn: &Connection, writes: Vec<WriteJob>) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        for write in writes {
            let (_, complete) = write(Err(&e));
            complete(Some(&e));
        }
        return;
    }
    // A job whose savepoint cannot be released or rolled back may have left half its writes (or
    // SQLite rolled the whole transaction back on an I/O error): then nothing is committed.
    let mut completions = Vec::with_capacity(writes.len());
    let mut poisoned = None;
    for write in writes {
        if let Some(e) = &poisoned {
            completions.push(write(Err(e)).1);
            continue;
        }
        if let Err(e) = conn.execute_batch("SAVEPOINT job") {
            completions.push(write(Err(&e)).1);
            poisoned = Some(e);
            continue;
        }
        let (ok, complete) = write(Ok(conn));
        let undo = if ok { "RELEASE job" } else { "ROLLBACK TO job; RELEASE job" };
        if let Err(e) = conn.execute_batch(undo) {
            poisoned = Some(e);
        }
        completions.push(complete);
    }
    let failure = match poisoned {
        Some(e) => Some(e),
        None => conn.execute_batch("COMMIT").err(),
    };
    if failure.is_some() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for complete in completions {
        complete(failure.as_ref());
    }
}
