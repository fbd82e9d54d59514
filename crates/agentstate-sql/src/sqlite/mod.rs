//! SQLite, the embedded default: the reference's v1 schema in a file (or in memory), WAL, a
//! group-committing writer thread and pooled readers.

mod artifact;
mod edit;
mod lease;
mod memory;
mod ops;
mod schema;
mod worker;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentstate::memory::{Memory, MemoryOwner};
use agentstate::store::{
    AdminStore, AttributesUpdate, Capabilities, CommitOutcome, EventCommit, EventCopy, EventCursor, EventQuery,
    HistorySnapshot, HistoryStore, LifecycleStore, ListQuery, LoadedSession, MemoryList, MemoryPut, MemorySearch,
    MemoryStore, NewSession, SessionRead, SessionStore, StateOwner, UserDataCounts, ValueSwap, replay,
};
use agentstate::{Error, Event, Map, Result, Session, SessionKey, Value};
use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags};

use worker::{Writer, WriterOptions};

use crate::schema::Schema;

/// How durable a commit is before it is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Survives a crash of the process and of the machine (fsync on every commit). The default;
    /// group commit amortises the fsync over every append waiting at the time.
    #[default]
    Full,
    /// Survives a crash of the process; a power loss may lose the last commits.
    Normal,
}

/// Options of a SQLite database.
#[derive(Debug, Clone, PartialEq)]
pub struct SqliteOptions {
    /// The file; `None` for a private in-memory database.
    pub path: Option<PathBuf>,
    /// Durability of commits.
    pub synchronous: Synchronous,
    /// How long to wait for another process's write lock before failing (retryably).
    pub busy_timeout: Duration,
    /// Most reader connections kept open.
    pub readers: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { path: None, synchronous: Synchronous::Full, busy_timeout: Duration::from_secs(5), readers: 4 }
    }
}

pub(crate) fn sqlite_error(context: &str, e: &rusqlite::Error) -> Error {
    use rusqlite::ErrorCode::{CannotOpen, DatabaseBusy, DatabaseLocked, DiskFull, ReadOnly};
    let code = e.sqlite_error_code();
    // A full disk is retryable: the transaction was rolled back whole, and the same write
    // succeeds once space is freed.
    let retryable = matches!(code, Some(DatabaseBusy | DatabaseLocked | DiskFull));
    let hint = match code {
        Some(DiskFull) => " (the disk is full: nothing was written; retry once space is freed)",
        Some(ReadOnly) => " (the database file or its directory is read-only)",
        Some(CannotOpen) => " (is its directory missing, or the file or its directory read-only?)",
        _ => "",
    };
    Error::Backend {
        message: format!("SQLite {context} failed: {e}{hint}"),
        retryable,
        source: Some(e.to_string().into()),
    }
}

/// Prepared statements kept per connection: every statement of the dialect, and the state edits
/// of commits (one statement per number of keys changed).
const STATEMENT_CACHE: usize = 96;

/// The SQLite session store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: Writer,
    readers: Option<Arc<ReaderPool>>,
    schema: Schema,
}

#[derive(Debug)]
/// At most `permits`' count of read-only connections, opened as first needed and kept. A read
/// takes a permit before it moves to a blocking thread, so concurrent reads queue on the runtime
/// rather than each holding a thread (and, past the limit, a connection of its own).
struct ReaderPool {
    path: PathBuf,
    busy_timeout: Duration,
    permits: Arc<tokio::sync::Semaphore>,
    idle: Mutex<Vec<Connection>>,
}

impl ReaderPool {
    /// An idle connection, or a new one: only under a permit, so there are never more than
    /// the permits.
    fn take(&self) -> Result<Connection> {
        if let Some(conn) = self.idle() {
            return Ok(conn);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(|e| sqlite_error("open reader", &e))?;
        conn.busy_timeout(self.busy_timeout)
            .and_then(|()| plan_once(&conn))
            .map_err(|e| sqlite_error("configure reader", &e))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(conn)
    }

    /// An idle connection, if one is open: never opens one.
    fn idle(&self) -> Option<Connection> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop()
    }

    fn give_back(&self, conn: Connection) {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database and its schema.
    pub async fn open(options: SqliteOptions) -> Result<Self> {
        let opened = options.clone();
        let (conn, schema) = tokio::task::spawn_blocking(move || open_writer(&opened))
            .await
            .map_err(|e| Error::backend("opening SQLite panicked", false, e))??;
        // A commit that does not wait for the disk may run on its caller's thread.
        let inline = options.synchronous == Synchronous::Normal || options.path.is_none();
        let writer = Writer::spawn(
            conn,
            WriterOptions { inline, busy_timeout: options.busy_timeout, wal: options.path.is_some() },
        )?;
        let readers = options.path.map(|path| {
            Arc::new(ReaderPool {
                path,
                busy_timeout: options.busy_timeout,
                permits: Arc::new(tokio::sync::Semaphore::new(options.readers.max(1))),
                idle: Mutex::new(Vec::new()),
            })
        });
        Ok(Self { writer, readers, schema })
    }

    /// The schema the database was found with, or created with.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)` from a connection of its own, retried while readers
    /// hold old snapshots (up to about five seconds); nothing for an in-memory database.
    async fn checkpoint(&self) -> Result<()> {
        let Some(pool) = &self.readers else { return Ok(()) };
        let (path, busy_timeout) = (pool.path.clone(), pool.busy_timeout);
        tokio::task::spawn_blocking(move || {
            let conn = Connection::open(&path).map_err(|e| sqlite_error("open for a checkpoint", &e))?;
            conn.busy_timeout(busy_timeout).map_err(|e| sqlite_error("configure a checkpoint", &e))?;
            for _ in 0..50 {
                let busy: i64 = conn
                    .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
                    .map_err(|e| sqlite_error("checkpoint", &e))?;
                if busy == 0 {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(Error::Backend {
                message: "the write-ahead log could not be emptied: readers kept old snapshots for 5 s; erase again"
                    .to_owned(),
                retryable: true,
                source: None,
            })
        })
        .await
        .map_err(|e| Error::backend("a SQLite checkpoint panicked", false, e))?
    }

    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let Some(pool) = &self.readers else { return self.writer.read(f).await };
        let pool = Arc::clone(pool);
        let permit = Arc::clone(&pool.permits)
            .acquire_owned()
            .await
            .map_err(|e| Error::backend("the SQLite readers are closed", false, e))?;
        tokio::task::spawn_blocking(move || {
            let conn = pool.take()?;
            let result = f(&conn);
            pool.give_back(conn);
            drop(permit);
            result
        })
        .await
        .map_err(|e| Error::backend("a SQLite read panicked", false, e))?
    }

    /// A read of a few rows by an index (microseconds), run on the caller's thread when a reader
    /// connection is idle: handing it to a blocking thread and back costs more than the read (a
    /// session's users by its id: 38 µs of a 158 µs request, measured with `grpc_figures --only
    /// router`). It does not wait there for a lock (a checkpoint's, say): any failure runs it
    /// again as [`read`](Self::read) does, which waits and reports.
    async fn read_quick<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T> + Send + 'static,
    {
        if let Some(pool) = &self.readers
            && let Ok(permit) = pool.permits.try_acquire()
            && let Some(conn) = pool.idle()
        {
            let found = conn.busy_timeout(Duration::ZERO).ok().map(|()| f(&conn));
            if conn.busy_timeout(pool.busy_timeout).is_ok() {
                pool.give_back(conn);
            }
            drop(permit);
            if let Some(Ok(found)) = found {
                return Ok(found);
            }
        }
        self.read(f).await
    }
}

/// Each cached statement is planned once, not again for the values bound to it: SQLite (with
/// STAT4, as bundled) otherwise treats a parameter it plans with, such as a `LIMIT ?`, as a
/// constant of the plan, and prepares the statement again every time that parameter is bound
/// (12 % of a `GET` of a 100-event session went to it). No statement here depends on a bound
/// value for its plan: no `LIKE ?`, and no `ANALYZE` statistics are kept.
fn plan_once(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map(drop)
}

fn open_writer(options: &SqliteOptions) -> Result<(Connection, Schema)> {
    let (conn, location) = match &options.path {
        Some(path) => (Connection::open(path), path.display().to_string()),
        None => (Connection::open_in_memory(), ":memory:".to_owned()),
    };
    let conn = conn.map_err(|e| sqlite_error(&format!("open {location}"), &e))?;
    let synchronous = match options.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    let journal = if options.path.is_some() { "PRAGMA journal_mode = WAL;" } else { "" };
    // secure_delete: deleted content (an erased user's, a swept session's) is overwritten, not
    // left in free pages of the file.
    conn.execute_batch(&format!(
        "{journal} PRAGMA synchronous = {synchronous}; PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON;"
    ))
    .and_then(|()| conn.busy_timeout(options.busy_timeout))
    .and_then(|()| plan_once(&conn))
    .map_err(|e| sqlite_error(&format!("configure {location}"), &e))?;
    let schema = schema::prepare(&conn, &location)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok((conn, schema))
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn create(&self, new: NewSession) -> Result<Session> {
        self.writer.write(move |conn| ops::create(conn, new)).await
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        let (key, read) = (key.clone(), *read);
        self.read(move |conn| ops::get(conn, &key, &read)).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        let query = query.clone();
        self.read(move |conn| ops::list(conn, &query)).await
    }

    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        let query = query.clone();
        self.read(move |conn| ops::count_sessions(conn, &query)).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        let key = key.clone();
        self.writer.write(move |conn| ops::delete(conn, &key)).await
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        self.writer.write(move |conn| ops::commit(conn, &commit)).await
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        let query = query.clone();
        self.read(move |conn| ops::events(conn, &query)).await
    }

    async fn count_events(&self, key: &SessionKey, now_micros: i64) -> Result<Option<usize>> {
        let key = key.clone();
        self.read(move |conn| ops::event_count(conn, &key, now_micros)).await
    }

    async fn users_with_session(&self, app: &str, session_id: &str, now_micros: i64) -> Result<Vec<String>> {
        let (app, session_id) = (app.to_owned(), session_id.to_owned());
        self.read_quick(move |conn| ops::users_with_session(conn, &app, &session_id, now_micros)).await
    }

    fn system(&self) -> &'static str {
        "sqlite"
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::every(self)
    }
}

#[async_trait]
impl MemoryStore for SqliteStore {
    async fn put_memories(&self, put: &MemoryPut) -> Result<usize> {
        let put = put.clone();
        self.writer.write(move |conn| memory::put(conn, &put)).await
    }

    async fn search_memories(&self, search: &MemorySearch) -> Result<Vec<Memory>> {
        let search = search.clone();
        self.read(move |conn| memory::search(conn, &search)).await
    }

    async fn list_memories(&self, list: &MemoryList) -> Result<Vec<Memory>> {
        let list = list.clone();
        self.read(move |conn| memory::list(conn, &list)).await
    }

    async fn find_memories(
        &self,
        app: &str,
        id: &str,
        now_micros: i64,
        limit: usize,
    ) -> Result<Vec<(MemoryOwner, Memory)>> {
        let (app, id) = (app.to_owned(), id.to_owned());
        self.read(move |conn| memory::find(conn, &app, &id, now_micros, limit)).await
    }

    async fn delete_memory(&self, owner: &MemoryOwner, id: &str) -> Result<usize> {
        let (owner, id) = (owner.clone(), id.to_owned());
        self.writer.write(move |conn| memory::delete(conn, &owner, &id)).await
    }

    async fn erase_memories(&self, owner: &MemoryOwner) -> Result<usize> {
        let owner = owner.clone();
        let erased = self.writer.write(move |conn| memory::erase(conn, &owner)).await?;
        // As for a user's sessions: nothing of the erased rows may stay in the write-ahead log.
        self.checkpoint().await?;
        Ok(erased)
    }

    async fn delete_expired_memories(&self, before_micros: i64, limit: usize) -> Result<usize> {
        self.writer.write(move |conn| memory::delete_expired(conn, before_micros, limit)).await
    }

    async fn count_memories(&self, owner: &MemoryOwner, now_micros: i64) -> Result<usize> {
        let owner = owner.clone();
        self.read(move |conn| memory::count_live(conn, &owner, now_micros)).await
    }

    async fn memory_owners(&self, after: Option<&MemoryOwner>, limit: usize) -> Result<Vec<MemoryOwner>> {
        let after = after.cloned();
        self.read(move |conn| memory::owners(conn, after.as_ref(), limit)).await
    }
}

#[async_trait]
impl HistoryStore for SqliteStore {
    async fn snapshot(&self, key: &SessionKey, at_or_before_micros: i64) -> Result<Option<HistorySnapshot>> {
        let key = key.clone();
        self.read(move |conn| ops::history_snapshot(conn, &key, at_or_before_micros)).await
    }

    async fn put_snapshots(&self, key: &SessionKey, snapshots: &[HistorySnapshot]) -> Result<()> {
        let (key, snapshots) = (key.clone(), snapshots.to_vec());
        self.writer.write(move |conn| ops::put_snapshots(conn, &key, &snapshots)).await
    }

    async fn copy_events(&self, copy: &EventCopy) -> Result<Option<EventCursor>> {
        let moved = copy.clone();
        match self.writer.write(move |conn| ops::copy_events(conn, &moved)).await? {
            None => replay::copy_events(self, copy).await,
            Some(0) => Ok(None),
            Some(_) => Ok(Some(copy.upto.clone())),
        }
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let (key, boundary) = (key.clone(), boundary.clone());
        self.writer.write(move |conn| ops::drop_events_before(conn, &key, cut_micros, &boundary)).await
    }
}

#[async_trait]
impl LifecycleStore for SqliteStore {
    async fn delete_expired(&self, before_micros: i64, limit: usize) -> Result<Vec<SessionKey>> {
        self.writer.write(move |conn| ops::delete_expired(conn, before_micros, limit)).await
    }

    async fn set_expire_time(&self, key: &SessionKey, expire_micros: Option<i64>, now_micros: i64) -> Result<bool> {
        let key = key.clone();
        self.writer.write(move |conn| ops::set_expire_time(conn, &key, expire_micros, now_micros)).await
    }

    async fn set_attributes(&self, key: &SessionKey, update: &AttributesUpdate, now_micros: i64) -> Result<bool> {
        let (key, update) = (key.clone(), update.clone());
        self.writer.write(move |conn| ops::set_attributes(conn, &key, &update, now_micros)).await
    }

    async fn erase_user(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        let (app, user) = (app.to_owned(), user.to_owned());
        let erased = self.writer.write(move |conn| ops::erase_user(conn, &app, &user)).await?;
        // The WAL still holds the pages as they were: copy them into the file (where
        // secure_delete zeroed the freed content) and empty it.
        self.checkpoint().await?;
        Ok(erased)
    }

    async fn count_user_data(&self, app: &str, user: &str) -> Result<UserDataCounts> {
        let (app, user) = (app.to_owned(), user.to_owned());
        self.read(move |conn| ops::user_data(conn, &app, &user)).await
    }
}

#[async_trait]
impl AdminStore for SqliteStore {
    async fn apps(&self) -> Result<Vec<String>> {
        self.read(ops::apps).await
    }

    async fn users(&self, app: &str) -> Result<Vec<String>> {
        let app = app.to_owned();
        self.read(move |conn| ops::users(conn, &app)).await
    }

    async fn stored_state(&self, owner: &StateOwner) -> Result<Map<String, Value>> {
        let owner = owner.clone();
        self.read(move |conn| ops::owner_state(conn, &owner).map(Option::unwrap_or_default)).await
    }

    async fn swap_values(&self, owner: &StateOwner, swaps: &[ValueSwap]) -> Result<usize> {
        let (owner, swaps) = (owner.clone(), swaps.to_vec());
        self.writer.write(move |conn| ops::swap_values(conn, &owner, &swaps)).await
    }

    async fn rewrite_event(&self, key: &SessionKey, event: &Event) -> Result<bool> {
        let (key, event) = (key.clone(), event.clone());
        self.writer.write(move |conn| ops::rewrite_event(conn, &key, &event)).await
    }

    async fn metadata(&self, name: &str) -> Result<Option<String>> {
        let name = name.to_owned();
        self.read(move |conn| ops::metadata(conn, &name)).await
    }

    async fn set_metadata(&self, name: &str, value: &str) -> Result<()> {
        let (name, value) = (name.to_owned(), value.to_owned());
        self.writer.write(move |conn| ops::set_metadata(conn, &name, &value)).await
    }
}

#[async_trait]
impl agentstate::store::SharedStateStore for SqliteStore {
    async fn shared_state(&self, owner: &agentstate::store::StateOwner) -> Result<Map<String, Value>> {
        agentstate::store::shared_state_as_stored(self, owner).await
    }

    async fn update_shared_state(&self, update: &agentstate::store::SharedStateUpdate) -> Result<()> {
        let update = update.clone();
        self.writer.write(move |conn| ops::update_shared(conn, &update)).await
    }

    async fn shared_state_writes(
        &self,
        query: &agentstate::store::SharedStateWrites,
    ) -> Result<Vec<agentstate::store::SharedStateWrite>> {
        let query = query.clone();
        self.read(move |conn| ops::state_writes(conn, &query)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement with a `LIMIT ?`, run again with another limit: whether SQLite prepared it
    /// again (its `SQLITE_STMTSTATUS_REPREPARE` count).
    fn prepared_again(conn: &Connection) -> i32 {
        let sql = "SELECT value FROM json_each('[1,2,3]') LIMIT ?1";
        for limit in [1, 2, 3] {
            let mut stmt = conn.prepare_cached(sql).unwrap();
            let rows: Vec<i64> = stmt.query_map([limit], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
            assert_eq!(rows.len(), usize::try_from(limit).unwrap());
        }
        conn.prepare_cached(sql).unwrap().get_status(rusqlite::StatementStatus::RePrepare)
    }

    #[test]
    fn statements_are_planned_once_on_the_writer_and_the_readers() {
        let dir = std::env::temp_dir().join(format!(
            "agentstate-plan-once-{}-{}",
            std::process::id(),
            std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let options = SqliteOptions { path: Some(dir.join("db.sqlite")), ..SqliteOptions::default() };
        let (writer, _) = open_writer(&options).unwrap();
        let pool = ReaderPool {
            path: dir.join("db.sqlite"),
            busy_timeout: options.busy_timeout,
            permits: Arc::new(tokio::sync::Semaphore::new(1)),
            idle: Mutex::new(Vec::new()),
        };
        let reader = pool.take().unwrap();
        assert_eq!(prepared_again(&writer), 0);
        assert_eq!(prepared_again(&reader), 0);
        // Without it, binding the limit prepares the statement again.
        let plain = Connection::open_in_memory().unwrap();
        assert!(prepared_again(&plain) > 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A quick read runs on the caller's thread once a reader is idle, without waiting for a
    /// lock there (busy timeout zero); one that fails there runs again on a blocking thread, with
    /// the busy timeout, and its answer is that run's.
    #[tokio::test(flavor = "current_thread")]
    async fn a_quick_read_runs_here_and_again_off_this_thread_if_it_fails_here() {
        use std::sync::atomic::{AtomicUsize, Ordering};

        let dir = std::env::temp_dir().join(format!("agentstate-quick-read-{}", Event::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = SqliteStore::open(SqliteOptions { path: Some(dir.join("db.sqlite")), ..SqliteOptions::default() })
            .await
            .unwrap();
        let here = std::thread::current().id();
        // Where each run was, and whether it could wait for a lock (a busy timeout).
        let runs = Arc::new(Mutex::new(Vec::new()));
        let failures = Arc::new(AtomicUsize::new(0));
        let read = |fail_first: bool| {
            let (runs, failures) = (Arc::clone(&runs), Arc::clone(&failures));
            move |conn: &Connection| {
                let waits: i64 = conn.query_row("PRAGMA busy_timeout", [], |row| row.get(0)).unwrap();
                runs.lock().unwrap().push((std::thread::current().id() == here, waits > 0));
                if fail_first && failures.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(Error::backend("database is locked", true, "busy"));
                }
                Ok(waits)
            }
        };
        // No reader is open yet: the first read opens one on a blocking thread.
        store.read_quick(read(false)).await.unwrap();
        assert_eq!(std::mem::take(&mut *runs.lock().unwrap()), [(false, true)]);
        // Now here, not waiting for locks; the reader keeps its busy timeout afterwards.
        assert_eq!(store.read_quick(read(false)).await.unwrap(), 0);
        assert_eq!(std::mem::take(&mut *runs.lock().unwrap()), [(true, false)]);
        // Failing here: again there, waiting as any read does; that run answers.
        assert_eq!(store.read_quick(read(true)).await.unwrap(), 5_000);
        assert_eq!(std::mem::take(&mut *runs.lock().unwrap()), [(true, false), (false, true)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
