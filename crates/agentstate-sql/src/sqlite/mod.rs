//! SQLite, the embedded default: the reference's v1 schema in a file (or in memory), WAL, a
//! group-committing writer thread and pooled readers.

mod artifact;
mod edit;
mod lease;
mod memory;
mod ops;
mod schema;
mod sizes;
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

use sizes::LoadSizes;
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
    /// Sessions' event counts as last seen: which loads run on their caller's thread.
    sizes: LoadSizes,
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

    /// Whether a load of `read` is short enough to run on its caller's thread (`conn`, idle,
    /// counts the session's events if its count was not seen).
    fn short_load(&self, conn: &Connection, slot: sizes::Slot, key: &SessionKey, read: &SessionRead) -> bool {
        ops::short_load(conn, key, read, self.sizes.get(slot)).unwrap_or(false)
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
                sizes: LoadSizes::default(),
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

    /// Runs `change` on the session's count as last seen (a file's readers keep them).
    fn sized(&self, key: &SessionKey, change: impl FnOnce(&LoadSizes, sizes::Slot)) {
        if let Some(pool) = &self.readers {
            change(&pool.sizes, pool.sizes.slot(key));
        }
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
        self.read_here_if(|_| true, f).await
    }

    /// [`read_quick`](Self::read_quick) for a read that may be long: `short`, asked first on
    /// the idle connection (a bounded count, say), says whether it is quick enough to run on the
    /// caller's thread; when not, it runs as [`read`](Self::read) does.
    async fn read_here_if<T, F>(&self, short: impl FnOnce(&Connection) -> bool + Send, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T> + Send + 'static,
    {
        if let Some(pool) = &self.readers
            && let Ok(permit) = pool.permits.try_acquire()
            && let Some(conn) = pool.idle()
        {
            let found = conn.busy_timeout(Duration::ZERO).ok().filter(|()| short(&conn)).map(|()| f(&conn));
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
        let session = self.writer.write(move |conn| ops::create(conn, new)).await?;
        self.sized(session.key(), |sizes, slot| sizes.saw(slot, 0));
        Ok(session)
    }

    async fn get(&self, key: &SessionKey, read: &SessionRead) -> Result<Option<LoadedSession>> {
        let Some(pool) = &self.readers else {
            let (key, read) = (key.clone(), *read);
            return self.read(move |conn| ops::get(conn, &key, &read)).await;
        };
        // A load of a few events runs where it is asked (handing it to a blocking thread and
        // back costs as much as the read); a longer one on a blocking thread. The session's
        // count as last seen decides, else a bounded count of its events.
        let slot = pool.sizes.slot(key);
        let short = |conn: &Connection| pool.short_load(conn, slot, key, read);
        let (owned, read) = (key.clone(), *read);
        let loaded = self.read_here_if(short, move |conn| ops::get(conn, &owned, &read)).await?;
        if let Some(count) = loaded.as_ref().and_then(|loaded| ops::whole_count(&read, loaded)) {
            pool.sizes.saw(slot, count);
        }
        Ok(loaded)
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<Session>> {
        // A sidebar's page of a few sessions runs where it is asked, as a short load does.
        let short = ops::short_list(query);
        let query = query.clone();
        self.read_here_if(|_| short, move |conn| ops::list(conn, &query)).await
    }

    async fn count_sessions(&self, query: &ListQuery) -> Result<usize> {
        let query = query.clone();
        self.read(move |conn| ops::count_sessions(conn, &query)).await
    }

    async fn delete(&self, key: &SessionKey) -> Result<()> {
        let moved = key.clone();
        let deleted = self.writer.write(move |conn| ops::delete(conn, &moved)).await;
        self.sized(key, LoadSizes::forget);
        deleted
    }

    async fn commit(&self, commit: EventCommit) -> Result<CommitOutcome> {
        let slot = self.readers.as_ref().map(|pool| pool.sizes.slot(&commit.key));
        let outcome = self.writer.write(move |conn| ops::commit(conn, &commit)).await?;
        if let (Some(pool), Some(slot), CommitOutcome::Committed) = (&self.readers, slot, &outcome) {
            pool.sizes.grew(slot);
        }
        Ok(outcome)
    }

    async fn events(&self, query: &EventQuery) -> Result<Option<Vec<Event>>> {
        // A page of history is bounded by its size: a short one runs where it is asked, as a
        // short load does.
        let short = ops::short_select(&query.select);
        let query = query.clone();
        self.read_here_if(|_| short, move |conn| ops::events(conn, &query)).await
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
        let copied = self.writer.write(move |conn| ops::copy_events(conn, &moved)).await;
        // Counted after the copy, not before: a load in between would count the empty session.
        self.sized(&copy.to, LoadSizes::forget);
        match copied? {
            None => replay::copy_events(self, copy).await,
            Some(0) => Ok(None),
            Some(_) => Ok(Some(copy.upto.clone())),
        }
    }

    async fn drop_events_before(&self, key: &SessionKey, cut_micros: i64, boundary: &HistorySnapshot) -> Result<usize> {
        let (moved, boundary) = (key.clone(), boundary.clone());
        let dropped = self.writer.write(move |conn| ops::drop_events_before(conn, &moved, cut_micros, &boundary)).await;
        self.sized(key, LoadSizes::forget);
        dropped
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
mod tests;
