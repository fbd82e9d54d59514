//! The commands that work on a database directly: `migrate`, `sessions …`, `import-adk`.

use std::io::{BufReader, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use agentstate::archive::{self, ImportOptions, Progress};
use agentstate::wire;
use agentstate::{GetSessionConfig, ListSessions, SessionKey, SessionService};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use super::args::{DbArg, SessionsCommand};
use super::backend::{open, open_sql};

/// Progress of a long copy on standard error: a spinner with counts on a terminal, a line every
/// 1,000 sessions otherwise (a log).
struct Shown {
    verb: &'static str,
    bar: Option<ProgressBar>,
}

impl Shown {
    fn new(verb: &'static str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Self { verb, bar }
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

pub(crate) async fn import_adk(db: &DbArg, from: &Path, skip_existing: bool) -> anyhow::Result<()> {
    let (service, _) = open_sql(&db.db).await?;
    let shown = Shown::new("imported");
    let options = ImportOptions { skip_existing };
    let done = agentstate_sql::adk_web::import(&service, from, options, |p| shown.update(p)).await;
    shown.finish();
    let done = done?;
    eprintln!(
        "imported {} sessions with {} events from {}; {} already existed",
        done.sessions,
        done.events,
        from.display(),
        done.skipped
    );
    Ok(())
}

pub(crate) async fn run(command: SessionsCommand) -> anyhow::Result<()> {
    match command {
        SessionsCommand::List { db, app, user } => {
            let (service, _) = open(&db.db).await?;
            let request = ListSessions { app_name: app, user_id: user, ..ListSessions::default() };
            for s in service.list_sessions(request).await?.sessions {
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
            let (service, _) = open(&db.db).await?;
            let key = SessionKey::new(app, user, session)?;
            let found = service.get_session(&key, GetSessionConfig::default()).await?;
            let session = found.with_context(|| format!("no session {key}"))?;
            println!("{}", serde_json::to_string_pretty(&wire::session_to_wire(&session))?);
        }
        SessionsCommand::Export { db, app, user, output } => {
            let (service, _) = open(&db.db).await?;
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
            let (service, _) = open(&db.db).await?;
            let records: Box<dyn Iterator<Item = _>> = match &input {
                Some(path) => Box::new(archive::read_lines(BufReader::new(
                    std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?,
                ))),
                None => Box::new(archive::read_lines(std::io::stdin().lock())),
            };
            let shown = Shown::new("imported");
            let options = ImportOptions { skip_existing };
            let done = archive::import(&service, records, options, |p| shown.update(p)).await;
            shown.finish();
            let done = done?;
            eprintln!(
                "imported {} sessions with {} events; {} already existed",
                done.sessions, done.events, done.skipped
            );
        }
        SessionsCommand::Delete { db, app, user, session } => {
            let (service, _) = open(&db.db).await?;
            service.delete_session(&SessionKey::new(app, user, session)?).await?;
        }
    }
    Ok(())
}
