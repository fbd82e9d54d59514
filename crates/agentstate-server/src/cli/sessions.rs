//! The commands that work on a database directly: `migrate`, `sessions …`, `import-adk`.

use std::io::{BufReader, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use agentstate::archive::{self, ImportOptions, Progress};
use agentstate::wire;
use agentstate::{GetSessionConfig, ListEvents, ListSessions, SessionKey, SessionService};
use anyhow::{Context, anyhow, bail};
use indicatif::{ProgressBar, ProgressStyle};

use super::args::{DbArg, ListBy, ListOrder, SessionsCommand};
use super::backend::{Backend, is_redis, open, open_sql};

/// A spinner on standard error when it is a terminal (else the caller prints lines, for a log).
fn spinner() -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    })
}

/// Progress of a long copy on standard error: a spinner with counts on a terminal, a line every
/// 1,000 sessions otherwise (a log).
struct Shown {
    verb: &'static str,
    bar: Option<ProgressBar>,
}

impl Shown {
    fn new(verb: &'static str) -> Self {
        Self { verb, bar: spinner() }
    }

    fn update(&self, done: &Progress) {
        match &self.bar {
            Some(bar) => bar.set_message(format!("{} {} sessions, {} events", self.verb, done.sessions, done.events)),
            None if (done.sessions + done.skipped).is_multiple_of(1000) => {
                eprintln!("{} {} sessions, {} events", self.verb, done.sessions, done.events);
            }
            None => {}
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

pub(crate) async fn migrate(db: &DbArg) -> anyhow::Result<()> {
    let (service, url) = open_sql(&db.db).await?;
    let schema = service.schema();
    let how = if schema.created { "created" } else { "found" };
    println!("{url}: schema version {} ({how}; ADK for Python DatabaseSessionService v1)", schema.version);
    Ok(())
}

pub(crate) async fn sweep(db: &DbArg, retention: &[(String, agentstate::Retention)]) -> anyhow::Result<()> {
    let (backend, url) = open(db).await?;
    let service = backend.service();
    let metrics = agentstate_server::Metrics::default();
    let removed = agentstate_server::sweep(&service, agentstate_server::SWEEP_BATCH, &metrics).await?;
    println!("{url}: removed {removed} expired sessions");
    for (app, policy) in retention {
        let dropped = agentstate_server::retain(&service, app, *policy, &metrics).await?;
        println!("{url}: dropped {dropped} events of app {app:?} by its retention policy");
    }
    Ok(())
}

pub(crate) async fn rekey(db: &DbArg) -> anyhow::Result<()> {
    let (backend, url) = open(db).await?;
    let Backend::Encrypted(store) = backend else {
        anyhow::bail!("{url}: give the keys to re-encrypt with (--encryption-keys-file, the new key first)");
    };
    let bar = spinner();
    let line = |p: &agentstate::crypt::Rekeyed| {
        format!(
            "{} sessions of {} apps: {} values, {} events, {} snapshots, {} memories re-encrypted",
            p.sessions, p.apps, p.values, p.events, p.snapshots, p.memories
        )
    };
    let done = store
        .rekey(|p| match &bar {
            Some(bar) => bar.set_message(line(p)),
            None if p.sessions.is_multiple_of(1000) => eprintln!("{}", line(p)),
            None => {}
        })
        .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let done = done?;
    println!("{url}: {}; the first key now reads and writes everything", line(&done));
    Ok(())
}

/// `agentstate state APP [--user USER]`.
pub(crate) async fn shared_state(
    db: &DbArg,
    app: &str,
    user: Option<&str>,
    set: Vec<(String, agentstate::Value)>,
    delete: &[String],
) -> anyhow::Result<()> {
    let service = open(db).await?.0.service();
    if !set.is_empty() || !delete.is_empty() {
        let write = agentstate::StateWrite {
            delta: set.into_iter().collect(),
            deleted: delete.to_vec(),
            origin: "agentstate state (the command line)".into(),
        };
        match user {
            Some(user) => service.update_user_state(app, user, write).await?,
            None => service.update_app_state(app, write).await?,
        }
    }
    let state = match user {
        Some(user) => service.user_state(app, user).await?,
        None => service.app_state(app).await?,
    };
    println!("{}", serde_json::to_string_pretty(&state)?);
    Ok(())
}

pub(crate) async fn erase_user(db: &DbArg, app: &str, user: &str, yes: bool) -> anyhow::Result<()> {
    let service = open(db).await?.0.service();
    let found = if yes { service.erase_user(app, user).await? } else { service.count_user_data(app, user).await? };
    let what = format!(
        "{} sessions, {} events, {} user: keys, {} memories and {} artifact versions of user {user:?} in app {app:?}",
        found.sessions, found.events, found.user_state_keys, found.memories, found.artifacts
    );
    if yes {
        println!("erased {what}; app: state is untouched");
    } else {
        println!("would erase {what}; run again with --yes to erase them");
    }
    Ok(())
}

pub(crate) async fn import_adk(db: &DbArg, from: &str, key_prefix: &str, skip_existing: bool) -> anyhow::Result<()> {
    let store = open(db).await?.0.store();
    let shown = Shown::new("imported");
    let options = ImportOptions { skip_existing };
    let (done, source) = if is_redis(from) {
        let done = agentstate_redis::import_adk(store.as_ref(), from, key_prefix, options, |p| shown.update(p)).await;
        let url = agentstate_redis::RedisUrl::parse(from)?.to_string();
        let server = url.split('?').next().unwrap_or_default().to_owned();
        (done.map_err(anyhow::Error::from), format!("{server} (keys {key_prefix}*)"))
    } else {
        let path = Path::new(from);
        let done = agentstate_sql::adk_web::import(store.as_ref(), path, options, |p| shown.update(p)).await;
        (done.map_err(anyhow::Error::from), path.display().to_string())
    };
    shown.finish();
    let done = done?;
    eprintln!(
        "imported {} sessions with {} events from {source}; {} already existed",
        done.sessions, done.events, done.skipped
    );
    Ok(())
}

pub(crate) async fn run(command: SessionsCommand) -> anyhow::Result<()> {
    match command {
        SessionsCommand::List {
            db,
            app,
            user,
            order,
            by,
            labels,
            display_name,
            state,
            filter,
            limit,
            offset,
            count,
        } => {
            if limit == Some(0) {
                bail!("--limit must be at least 1");
            }
            let parsed = agentstate::filter::parse_session_filter(filter.as_deref().unwrap_or_default())?;
            let user = match (user, parsed.user_id) {
                (Some(a), Some(b)) if a != b => bail!("--user {a:?} and the filter's user_id {b:?} differ"),
                (user, named) => user.or(named),
            };
            let mut filter = parsed.filter;
            for label in labels {
                let (k, v) = label.split_once('=').with_context(|| format!("--label {label:?}: write KEY=VALUE"))?;
                filter.labels.insert(k.to_owned(), v.to_owned());
            }
            for pair in state {
                let (k, v) = pair.split_once('=').with_context(|| format!("--state {pair:?}: write KEY=JSON"))?;
                let value: serde_json::Value =
                    serde_json::from_str(v).with_context(|| format!("--state {pair:?}: the value is not JSON"))?;
                let value =
                    agentstate::filter::state_condition(k, value).map_err(|why| anyhow!("--state {pair:?}: {why}"))?;
                filter.state.insert(k.to_owned(), value);
            }
            if display_name.is_some() {
                filter.display_name = display_name;
            }
            let service = open(&db).await?.0.service();
            let request = ListSessions {
                app_name: app,
                user_id: user,
                order_by: match by {
                    ListBy::Update => agentstate::store::ListOrder::UpdateTime,
                    ListBy::Create => agentstate::store::ListOrder::CreateTime,
                },
                filter,
                newest_first: order == ListOrder::Desc,
                offset,
                count,
                // Counting needs no session: one is read.
                page_size: if count { Some(1) } else { limit },
                ..ListSessions::default()
            };
            let page = service.list_sessions(request).await?;
            if count {
                println!("{}", page.total_size.unwrap_or_default());
                return Ok(());
            }
            for s in page.sessions {
                println!(
                    "{}\t{}\t{:.6}\t{}",
                    s.user_id(),
                    s.id(),
                    s.last_update_time(),
                    serde_json::to_string(s.state())?
                );
            }
        }
        SessionsCommand::Show { db, app, user, session } => {
            let service = open(&db).await?.0.service();
            let key = SessionKey::new(app, user, session)?;
            let found = service.get_session(&key, GetSessionConfig::default()).await?;
            let session = found.with_context(|| format!("no session {key}"))?;
            println!("{}", serde_json::to_string_pretty(&wire::session_to_wire(&session))?);
        }
        SessionsCommand::History { db, app, user, session, json } => {
            let service = open(&db).await?.0.service();
            let key = SessionKey::new(app, user, session)?;
            history(&service, &key, json).await?;
        }
        SessionsCommand::Export { db, app, user, output } => {
            let service = open(&db).await?.0.service();
            let mut out: Box<dyn Write> = match &output {
                Some(path) => Box::new(BufWriter::new(
                    std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
                )),
                None => Box::new(BufWriter::new(std::io::stdout().lock())),
            };
            let shown = Shown::new("exported");
            let done = archive::export(&service, &app, user.as_deref(), &mut out, |p| shown.update(p)).await;
            shown.finish();
            let done = done?;
            out.flush()?;
            eprintln!("exported {} sessions with {} events", done.sessions, done.events);
        }
        SessionsCommand::Import { db, input, skip_existing } => {
            let service = open(&db).await?.0.service();
            let records: Box<dyn Iterator<Item = _>> = match &input {
                Some(path) => Box::new(archive::read_lines(BufReader::new(
                    std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?,
                ))),
                None => Box::new(archive::read_lines(std::io::stdin().lock())),
            };
            let shown = Shown::new("imported");
            let options = ImportOptions { skip_existing };
            let done = archive::import(service.store().as_ref(), records, options, |p| shown.update(p)).await;
            shown.finish();
            let done = done?;
            eprintln!(
                "imported {} sessions with {} events; {} already existed",
                done.sessions, done.events, done.skipped
            );
        }
        SessionsCommand::Delete { db, app, user, session } => {
            let service = open(&db).await?.0.service();
            service.delete_session(&SessionKey::new(app, user, session)?).await?;
        }
    }
    Ok(())
}

/// `sessions history`: one pass over the history, a page at a time, each event's diff against
/// the state folded so far.
async fn history(service: &SessionService, key: &SessionKey, json: bool) -> anyhow::Result<()> {
    use agentstate::history::{self, ChangeKind, HistoryAt};
    let start = service.state_at(key, HistoryAt::Creation).await?.with_context(|| format!("no session {key}"))?;
    let mut events = Vec::new();
    let mut request = ListEvents { page_size: 1000, ..ListEvents::default() };
    loop {
        let page = service.list_events(key, request.clone()).await?.with_context(|| format!("no session {key}"))?;
        events.extend(page.events);
        match page.next_page_token {
            Some(token) => request.page_token = Some(token),
            None => break,
        }
    }
    let live: std::collections::HashSet<&str> = history::live_events(&events).iter().map(|e| e.id.as_str()).collect();
    let mut out = std::io::stdout().lock();
    let mut state = start.state;
    if json {
        writeln!(out, "{}", serde_json::json!({"created": start.timestamp, "state": state}))?;
    } else {
        writeln!(out, "{}  created  {}", time(start.timestamp), serde_json::to_string(&state)?)?;
    }
    for event in &events {
        let changes = history::diff(&state, event);
        history::apply(&mut state, event);
        let is_live = live.contains(event.id.as_str());
        if json {
            let changes: Vec<_> = changes
                .iter()
                .map(|c| serde_json::json!({"key": c.key, "change": c.kind(), "before": c.before, "after": c.after}))
                .collect();
            let line = serde_json::json!({"eventId": event.id, "timestamp": event.timestamp,
                "invocationId": event.invocation_id, "author": event.author, "live": is_live, "changes": changes});
            writeln!(out, "{line}")?;
            continue;
        }
        let rewind = event.actions.rewind_before_invocation_id.as_deref().map(|x| format!("  rewinds before {x}"));
        let mark = if is_live { "" } else { "  (rewound)" };
        writeln!(
            out,
            "{}  {}  {}  {}{}{}",
            time(event.timestamp),
            event.invocation_id,
            event.author,
            event.id,
            rewind.unwrap_or_default(),
            mark
        )?;
        let text = event.text();
        if !text.is_empty() {
            let short: String = text.chars().take(100).collect();
            writeln!(out, "    \"{}{}\"", short.replace('\n', " "), if text.chars().count() > 100 { "…" } else { "" })?;
        }
        for change in changes {
            let value = |v: &Option<serde_json::Value>| v.as_ref().map(ToString::to_string).unwrap_or_default();
            match change.kind() {
                ChangeKind::Set => writeln!(out, "    + {} = {}", change.key, value(&change.after))?,
                ChangeKind::Changed => {
                    writeln!(out, "    ~ {}: {} -> {}", change.key, value(&change.before), value(&change.after))?;
                }
                ChangeKind::Deleted => writeln!(out, "    - {} (was {})", change.key, value(&change.before))?,
            }
        }
    }
    Ok(())
}

/// Epoch seconds as RFC 3339 (UTC, microseconds).
fn time(secs: f64) -> String {
    let micros = agentstate::store::secs_to_micros(secs).unwrap_or_default();
    chrono::DateTime::<chrono::Utc>::from_timestamp_micros(micros)
        .map_or_else(|| secs.to_string(), |t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
}
