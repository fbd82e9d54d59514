//! `agentstate sessions export|import`: sessions with their events and their app and user state,
//! as JSON Lines, one session per line (storage JSON: snake_case events). An import stores events
//! as they were without re-applying their deltas, so shared `user:`/`app:` keys keep the values
//! they had when exported, whatever order sessions are imported in.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use agentstate::{
    Error, Event, EventCommit, GetSessionConfig, ListSessions, Map, NewSession, ScopedState, SessionKey,
    SessionService, SessionStore, Value,
};
use anyhow::Context;
use serde::{Deserialize, Serialize};

/// One exported session.
#[derive(Debug, Serialize, Deserialize)]
pub struct Record {
    /// The app.
    pub app_name: String,
    /// The user.
    pub user_id: String,
    /// The session id.
    pub id: String,
    /// Last update, epoch seconds.
    pub last_update_time: f64,
    /// The merged state: session keys, `app:` keys, `user:` keys.
    pub state: Map<String, Value>,
    /// Every event, oldest first.
    pub events: Vec<Event>,
}

/// Progress on stderr: a line rewritten in place on a terminal, a line every 1,000 otherwise.
struct Progress {
    what: &'static str,
    done: usize,
    tty: bool,
}

impl Progress {
    fn new(what: &'static str) -> Self {
        Self { what, done: 0, tty: std::io::stderr().is_terminal() }
    }

    fn tick(&mut self) {
        self.done += 1;
        if self.tty {
            eprint!("\r{} {} sessions", self.what, self.done);
        } else if self.done.is_multiple_of(1000) {
            eprintln!("{} {} sessions", self.what, self.done);
        }
    }

    fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

/// Writes every session of `app` (or of one user) to `out`; returns (sessions, events).
pub async fn export(
    service: &dyn SessionService,
    app: &str,
    user: Option<String>,
    out: &mut impl Write,
) -> anyhow::Result<(usize, usize)> {
    let mut progress = Progress::new("exported");
    let mut request = ListSessions { app_name: app.to_owned(), user_id: user, page_size: Some(500), page_token: None };
    let mut events = 0;
    loop {
        let page = service.list_sessions(request.clone()).await?;
        for listed in &page.sessions {
            // Listed keys come from storage: they may be ids agentstate itself would refuse.
            let Some(session) = service.get_session(listed.key(), GetSessionConfig::default()).await? else { continue };
            events += session.events().len();
            let record = Record {
                app_name: session.app_name().to_owned(),
                user_id: session.user_id().to_owned(),
                id: session.id().to_owned(),
                last_update_time: session.last_update_time(),
                state: session.state().all().clone(),
                events: session.events().iter().cloned().collect(),
            };
            serde_json::to_writer(&mut *out, &record)?;
            out.write_all(b"\n")?;
            progress.tick();
        }
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => break,
        }
    }
    progress.finish();
    Ok((progress.done, events))
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// Sessions created.
    pub sessions: usize,
    /// Events stored.
    pub events: usize,
    /// Sessions that already existed and were left alone (with `skip_existing`).
    pub skipped: usize,
}

/// Reads JSON Lines written by [`export`] and stores every session, its events and its app and
/// user state. An existing session is an error, or skipped with `skip_existing`.
pub async fn import(
    store: Arc<dyn SessionStore>,
    input: impl BufRead,
    skip_existing: bool,
) -> anyhow::Result<Imported> {
    let records = input.lines().enumerate().filter_map(|(n, line)| match line {
        Ok(line) if line.trim().is_empty() => None,
        Ok(line) => {
            Some(serde_json::from_str(&line).with_context(|| format!("line {}: not an exported session", n + 1)))
        }
        Err(e) => Some(Err(e.into())),
    });
    import_records(store, records, skip_existing).await
}

/// Stores sessions one by one, as [`import`] does for each line; `records` may fail to produce
/// one (a line that is not JSON, a row that cannot be read), which stops the import.
pub async fn import_records(
    store: Arc<dyn SessionStore>,
    records: impl IntoIterator<Item = anyhow::Result<Record>>,
    skip_existing: bool,
) -> anyhow::Result<Imported> {
    let mut progress = Progress::new("imported");
    let mut done = Imported::default();
    for record in records {
        let record = record?;
        let name = format!("session {}/{}/{}", record.app_name, record.user_id, record.id);
        match import_one(store.as_ref(), record).await {
            Ok(events) => {
                done.sessions += 1;
                done.events += events;
            }
            Err(Error::AlreadyExists { .. }) if skip_existing => done.skipped += 1,
            Err(e) => return Err(anyhow::Error::new(e).context(name)),
        }
        progress.tick();
    }
    progress.finish();
    Ok(done)
}

async fn import_one(store: &dyn SessionStore, record: Record) -> Result<usize, Error> {
    let key = SessionKey::from_storage(record.app_name, record.user_id, record.id);
    let first = record.events.first().and_then(|e| agentstate::time::secs_to_micros(e.timestamp));
    let last_update = agentstate::time::secs_to_micros(record.last_update_time).unwrap_or_default();
    let created = first.map_or(last_update, |t| t.min(last_update) - 1);
    let new = NewSession { key: key.clone(), state: ScopedState::split(record.state), create_time_micros: created };
    let mut marker = store.create(new).await?.last_update_micros();
    let count = record.events.len();
    for event in record.events {
        let stored = agentstate::time::secs_to_micros(event.timestamp).unwrap_or_default();
        let timestamp_micros = stored.max(marker + 1);
        let commit = EventCommit {
            key: key.clone(),
            expected_last_update_micros: marker,
            event: Arc::new(Event { timestamp: agentstate::time::micros_to_secs(timestamp_micros), ..event }),
            timestamp_micros,
            // The state is imported as exported; the events' deltas are history, not applied again.
            delta: ScopedState::default(),
        };
        store.commit(commit).await?;
        marker = timestamp_micros;
    }
    Ok(count)
}
