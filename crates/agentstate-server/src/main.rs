//! `agentstate`: the session server and its command line.

use std::net::SocketAddr;
use std::sync::Arc;

use agentstate::{GetSessionConfig, ListSessions, SessionKey, SessionService};
use agentstate_server::{AppState, Limits, Tokens, app, transfer, wire};
use agentstate_sql::SqlSessionService;
use anyhow::{Context, bail};
use clap::{Parser, Subcommand};

/// Sessions and scoped state for AI agents: the ADK session API on SQLite, PostgreSQL or MySQL.
#[derive(Debug, Parser)]
#[command(name = "agentstate", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the ADK session REST API (the session routes of `adk api_server`).
    Serve(ServeArgs),
    /// Create or check the database schema, and print its version.
    Migrate(DbArg),
    /// Copy the local store of `adk web` / `adk api_server` (`<agents_dir>/<app>/.adk/session.db`)
    /// into an agentstate database.
    ImportAdk {
        #[command(flatten)]
        db: DbArg,
        /// The ADK store to read (opened read-only).
        #[arg(long)]
        from: std::path::PathBuf,
        /// Leave sessions that already exist alone instead of stopping.
        #[arg(long)]
        skip_existing: bool,
    },
    /// Inspect and manage sessions in a database.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
}

#[derive(Debug, clap::Args)]
struct DbArg {
    /// Database URL: sqlite://path.db, sqlite::memory:, postgres://…, mysql://…
    #[arg(long, env = "AGENTSTATE_DB", default_value = "sqlite://agentstate.db")]
    db: String,
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// A TOML file with any of these options (keys as the long option names, with `_` for `-`);
    /// command-line options and environment variables take precedence over it.
    #[arg(long, env = "AGENTSTATE_CONFIG")]
    config: Option<std::path::PathBuf>,
    #[command(flatten)]
    db: DbArg,
    /// Address to listen on.
    #[arg(long, env = "AGENTSTATE_ADDR", default_value = "127.0.0.1:8000")]
    addr: SocketAddr,
    /// Access tokens: a JSON file mapping each token to the apps (and users) it may touch.
    #[arg(long, env = "AGENTSTATE_TOKENS_FILE")]
    tokens_file: Option<std::path::PathBuf>,
    /// Access tokens as JSON, instead of a file (same format).
    #[arg(long, env = "AGENTSTATE_TOKENS", hide_env_values = true)]
    tokens: Option<String>,
    /// Listen on a non-loopback address although no access tokens are configured.
    #[arg(long, env = "AGENTSTATE_INSECURE_ALLOW_REMOTE")]
    insecure_allow_remote: bool,
    /// Serve an agent declared in YAML on /run and /run_sse: `FILE` (the app is the agent's name)
    /// or `APP=FILE`. Repeatable.
    #[arg(long = "agent", env = "AGENTSTATE_AGENTS", value_delimiter = ',')]
    agents: Vec<String>,
    /// Largest request body, in bytes (413 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_BODY_BYTES", default_value_t = Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Longest state key, in characters (400 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_KEY_CHARS", default_value_t = Limits::default().max_key_chars)]
    max_key_chars: usize,
    /// Deepest nesting of a state value (400 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_JSON_DEPTH", default_value_t = Limits::default().max_json_depth)]
    max_json_depth: usize,
    /// Largest state one request may write, in bytes of JSON (413 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_STATE_BYTES", default_value_t = Limits::default().max_state_bytes)]
    max_state_bytes: usize,
}

/// The options a config file may set (the same names as the command-line options).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    db: Option<String>,
    addr: Option<SocketAddr>,
    tokens_file: Option<std::path::PathBuf>,
    insecure_allow_remote: Option<bool>,
    agents: Option<Vec<String>>,
    max_body_bytes: Option<usize>,
    max_key_chars: Option<usize>,
    max_json_depth: Option<usize>,
    max_state_bytes: Option<usize>,
}

impl ServeArgs {
    /// Fills every option that the command line and the environment left at its default from
    /// the config file, if one is given.
    fn apply_config(&mut self, matches: &clap::ArgMatches) -> anyhow::Result<()> {
        let Some(path) = &self.config else { return Ok(()) };
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: ConfigFile =
            toml::from_str(&text).with_context(|| format!("{} is not a valid agentstate config", path.display()))?;
        let defaulted = |id: &str| {
            matches.value_source(id) == Some(clap::parser::ValueSource::DefaultValue)
                || matches.value_source(id).is_none()
        };
        macro_rules! fill {
            ($($field:ident),*) => {$(
                if let Some(v) = file.$field {
                    if defaulted(stringify!($field)) {
                        self.$field = v;
                    }
                }
            )*};
        }
        fill!(addr, insecure_allow_remote, max_body_bytes, max_key_chars, max_json_depth, max_state_bytes);
        if let Some(db) = file.db.filter(|_| defaulted("db")) {
            self.db.db = db;
        }
        if let Some(agents) = file.agents.filter(|_| self.agents.is_empty()) {
            // Agent files named in the config file are relative to it.
            let dir = path.parent().unwrap_or(std::path::Path::new("."));
            self.agents = agents
                .into_iter()
                .map(|spec| {
                    let (app, file) = match spec.split_once('=') {
                        Some((app, file)) => (format!("{app}="), file.to_owned()),
                        None => (String::new(), spec),
                    };
                    format!("{app}{}", dir.join(file).display())
                })
                .collect();
        }
        if let Some(tokens) = file.tokens_file.filter(|_| defaulted("tokens_file")) {
            self.tokens_file = Some(tokens);
        }
        Ok(())
    }

    fn tokens(&self) -> anyhow::Result<Tokens> {
        let json = match (&self.tokens_file, &self.tokens) {
            (Some(_), Some(_)) => {
                bail!("give access tokens either as --tokens-file or as --tokens/AGENTSTATE_TOKENS, not both")
            }
            (Some(path), None) => {
                std::fs::read_to_string(path).with_context(|| format!("reading tokens from {}", path.display()))?
            }
            (None, Some(json)) => json.clone(),
            (None, None) => return Ok(Tokens::default()),
        };
        Ok(Tokens::parse(&json)?)
    }

    fn limits(&self) -> Limits {
        Limits {
            max_body_bytes: self.max_body_bytes,
            max_key_chars: self.max_key_chars,
            max_json_depth: self.max_json_depth,
            max_state_bytes: self.max_state_bytes,
        }
    }
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// List the sessions of an app (or of one user), oldest update first.
    List {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// Only this user's sessions.
        #[arg(long)]
        user: Option<String>,
    },
    /// Print one session, with its events, as the API shows it.
    Show {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// The user.
        user: String,
        /// The session id.
        session: String,
    },
    /// Write every session of an app (or of one user), with events and app/user state, as JSON Lines.
    Export {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// Only this user's sessions.
        #[arg(long)]
        user: Option<String>,
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
    },
    /// Read sessions written by `export` into a database (their state as exported; events are
    /// stored as history, their deltas not applied again).
    Import {
        #[command(flatten)]
        db: DbArg,
        /// Read this file instead of standard input.
        #[arg(long, short)]
        input: Option<std::path::PathBuf>,
        /// Leave sessions that already exist alone instead of stopping.
        #[arg(long)]
        skip_existing: bool,
    },
    /// Delete one session and its events.
    Delete {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// The user.
        user: String,
        /// The session id.
        session: String,
    },
}

async fn connect(db: &DbArg) -> anyhow::Result<SqlSessionService> {
    SqlSessionService::connect(&db.db).await.with_context(|| format!("opening {}", agentstate_sql::redact(&db.db)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,agentstate=info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches)?;
    match cli.command {
        Command::Serve(mut args) => {
            if let Some(serve_matches) = matches.subcommand_matches("serve") {
                args.apply_config(serve_matches)?;
            }
            serve(args).await
        }
        Command::Migrate(db) => {
            connect(&db).await?;
            println!("{}: schema version 1 (ADK for Python DatabaseSessionService v1)", agentstate_sql::redact(&db.db));
            Ok(())
        }
        Command::Sessions { command } => sessions(command).await,
        Command::ImportAdk { db, from, skip_existing } => {
            let store: Arc<dyn agentstate::SessionStore> = Arc::new(connect(&db).await?);
            let done = agentstate_server::adk_import::import(store, &from, skip_existing).await?;
            eprintln!(
                "imported {} sessions with {} events from {}; {} already existed",
                done.sessions,
                done.events,
                from.display(),
                done.skipped
            );
            Ok(())
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let tokens = args.tokens()?;
    if !args.addr.ip().is_loopback() && !tokens.is_enabled() && !args.insecure_allow_remote {
        bail!(
            "refusing to listen on {} without access tokens: anyone who can reach it could read and change every \
             session. Listen on 127.0.0.1 behind an authenticating proxy, or pass --insecure-allow-remote.",
            args.addr
        );
    }
    let service = Arc::new(connect(&args.db).await?);
    let mut state = AppState { limits: args.limits(), tokens: Arc::new(tokens), ..AppState::new(service) };
    for spec in &args.agents {
        let (app, path) = match spec.split_once('=') {
            Some((app, path)) => (Some(app.to_owned()), std::path::PathBuf::from(path)),
            None => (None, std::path::PathBuf::from(spec)),
        };
        let agent = agentstate_runtime::config::load_agent(&path)?;
        let app = app.unwrap_or_else(|| agent.name().to_owned());
        if state.runners.contains_key(&app) {
            bail!(
                "two agents are served as app {app:?}: give one of them another name with --agent OTHER={}",
                path.display()
            );
        }
        tracing::info!(app = %app, agent = agent.name(), file = %path.display(), "serving agent");
        state = state.agent(app, agent);
    }
    let listener =
        tokio::net::TcpListener::bind(args.addr).await.with_context(|| format!("listening on {}", args.addr))?;
    tracing::info!(
        addr = %listener.local_addr()?,
        db = %agentstate_sql::redact(&args.db.db),
        tokens = state.tokens.tokens.len(),
        agents = state.runners.len(),
        "agentstate serving"
    );
    axum::serve(listener, app(state)).with_graceful_shutdown(shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on ctrl-c or SIGTERM; in-flight requests then finish before the server exits.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
    tracing::info!("shutting down: finishing in-flight requests");
}

async fn sessions(command: SessionsCommand) -> anyhow::Result<()> {
    match command {
        SessionsCommand::List { db, app, user } => {
            let service = connect(&db).await?;
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
            let service = connect(&db).await?;
            let key = SessionKey::new(app, user, session)?;
            let found = service.get_session(&key, GetSessionConfig::default()).await?;
            let session = found.with_context(|| format!("no session {key}"))?;
            println!("{}", serde_json::to_string_pretty(&wire::session_to_wire(&session))?);
        }
        SessionsCommand::Export { db, app, user, output } => {
            let service = connect(&db).await?;
            let (sessions, events) = match output {
                Some(path) => {
                    let file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
                    let mut out = std::io::BufWriter::new(file);
                    let counts = transfer::export(&service, &app, user, &mut out).await?;
                    std::io::Write::flush(&mut out)?;
                    counts
                }
                None => transfer::export(&service, &app, user, &mut std::io::stdout().lock()).await?,
            };
            eprintln!("exported {sessions} sessions with {events} events");
        }
        SessionsCommand::Import { db, input, skip_existing } => {
            let store: Arc<dyn agentstate::SessionStore> = Arc::new(connect(&db).await?);
            let done = match input {
                Some(path) => {
                    let file = std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
                    transfer::import(store, std::io::BufReader::new(file), skip_existing).await?
                }
                None => transfer::import(store, std::io::stdin().lock(), skip_existing).await?,
            };
            eprintln!(
                "imported {} sessions with {} events; {} already existed",
                done.sessions, done.events, done.skipped
            );
        }
        SessionsCommand::Delete { db, app, user, session } => {
            let service = connect(&db).await?;
            service.delete_session(&SessionKey::new(app, user, session)?).await?;
        }
    }
    Ok(())
}
