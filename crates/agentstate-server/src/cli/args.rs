//! The command line: every command and option, with the environment variable that can set it.
//! `serve`'s options can also come from a config file (see `config`), as defaults the command line
//! and the environment override.

use std::net::SocketAddr;
use std::path::PathBuf;

use agentstate_server::Limits;
use clap::{Parser, Subcommand};

/// Sessions and scoped state for AI agents: the ADK session API on SQLite, PostgreSQL, MySQL or Redis.
#[derive(Parser)]
#[command(name = "agentstate", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Serve the ADK session REST API (the session routes of `adk api_server`).
    Serve(Box<ServeArgs>),
    /// Create or check the database schema, and print its version.
    Migrate(DbArg),
    /// Copy sessions written by ADK for Python into an agentstate database: the local store of
    /// `adk web` / `adk api_server` (`<agents_dir>/<app>/.adk/session.db`), or the Redis of its
    /// `RedisStore` (`--from redis://…`).
    ImportAdk {
        #[command(flatten)]
        db: DbArg,
        /// The ADK store to read: a session.db file (opened read-only), or a redis:// URL.
        #[arg(long)]
        from: String,
        /// With a redis:// source: the `key_prefix` of the RedisStore that wrote it.
        #[arg(long, default_value = agentstate_redis::ADK_DEFAULT_PREFIX)]
        key_prefix: String,
        /// Leave sessions that already exist alone instead of stopping.
        #[arg(long)]
        skip_existing: bool,
    },
    /// Remove every expired session now, and apply --app-retention policies (a server does both
    /// every --sweep-interval); print how much went.
    Sweep {
        #[command(flatten)]
        db: DbArg,
        #[command(flatten)]
        retention: RetentionArg,
    },
    /// Print an app's `app:` state, or with --user a user's `user:` state, without a session (JSON,
    /// keys without the prefix); with --set or --delete, write it first (merged key by key, as an
    /// append would).
    State {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// This user's state instead of the app's.
        #[arg(long)]
        user: Option<String>,
        /// Set a key (without its prefix) to a JSON value (or, if it is not JSON, that text):
        /// `--set plan='"pro"'`, `--set visits=3`, `--set lang=fr`. Repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
        set: Vec<(String, serde_json::Value)>,
        /// Remove a key (without its prefix). Repeatable.
        #[arg(long = "delete", value_name = "KEY")]
        delete: Vec<String>,
    },
    /// Erase everything of a user in an app (every session, event and user: key; app: state stays).
    /// Without --yes it only counts what it would remove.
    EraseUser {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// The user.
        user: String,
        /// Really erase (without it, nothing is removed).
        #[arg(long)]
        yes: bool,
    },
    /// Re-encrypt everything written with an older key (or before encryption was on) with the
    /// first key of --encryption-keys-file, while servers keep running; then the old keys can go.
    Rekey(DbArg),
    /// Print a new random encryption key (`id:base64`) for --encryption-keys-file.
    EncryptionKey {
        /// Its id (letters, digits, - or _), stored beside each ciphertext it makes.
        #[arg(long, default_value = "k1")]
        id: String,
    },
    /// Inspect and manage sessions in a database.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
}

#[derive(clap::Args)]
pub(crate) struct DbArg {
    /// Database URL: sqlite://path.db, sqlite::memory:, postgres://… (a host list h1,h2 with
    /// ?target_session_attrs=read-write follows the primary), mysql://…, redis://…[?prefix=…] (or
    /// rediss://, or redis+sentinel://s1,s2/master), or agentengine://ID (the Agent Engine Sessions API;
    /// credentials from GOOGLE_API_KEY or AGENTSTATE_VERTEX_TOKEN)
    #[arg(long, env = "AGENTSTATE_DB", default_value = "sqlite://agentstate.db", hide_env_values = true)]
    pub(crate) db: String,
    /// Encryption at rest: a file of `id:base64-key` lines (32-byte AES-256 keys; the first encrypts
    /// new writes, all decrypt). `agentstate encryption-key` makes one.
    #[arg(long, env = "AGENTSTATE_ENCRYPTION_KEYS_FILE")]
    pub(crate) encryption_keys_file: Option<std::path::PathBuf>,
    /// The same keys given directly (`id:base64,id:base64`), instead of a file.
    #[arg(long, env = "AGENTSTATE_ENCRYPTION_KEYS", hide_env_values = true, conflicts_with = "encryption_keys_file")]
    pub(crate) encryption_keys: Option<String>,
    /// Keep artifact payloads as files in this directory (created if missing), their index in
    /// the database; every command that opens the database must be given the same directory.
    #[arg(long, env = "AGENTSTATE_ARTIFACTS_DIR")]
    pub(crate) artifacts_dir: Option<std::path::PathBuf>,
    /// With --artifacts-dir: payloads of fewer bytes stay in the database.
    #[arg(long, env = "AGENTSTATE_ARTIFACTS_INLINE_BELOW", default_value_t = agentstate_backends::DEFAULT_INLINE_BELOW, requires = "artifacts_dir")]
    pub(crate) artifacts_inline_below: usize,
}

/// The options of `serve`. Each can also be set in the config file under its field name. No
/// `Debug`: they hold secrets (tokens, the database password).
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// A TOML file with any of these options (keys as the long option names, with `_` for `-`);
    /// command-line options and environment variables take precedence over it.
    #[arg(long, env = "AGENTSTATE_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Address to listen on.
    #[arg(long, env = "AGENTSTATE_ADDR", default_value = "127.0.0.1:8000")]
    pub(crate) addr: SocketAddr,
    /// Access tokens: a JSON file mapping each token to the apps (and users) it may touch.
    #[arg(long, env = "AGENTSTATE_TOKENS_FILE")]
    pub(crate) tokens_file: Option<PathBuf>,
    /// Access tokens as JSON, instead of a file (same format).
    #[arg(long, env = "AGENTSTATE_TOKENS", hide_env_values = true)]
    pub(crate) tokens: Option<String>,
    /// Listen on a non-loopback address although no access tokens are configured.
    #[arg(long, env = "AGENTSTATE_INSECURE_ALLOW_REMOTE")]
    pub(crate) insecure_allow_remote: bool,
    /// Serve an agent declared in YAML on /run and /run_sse: `FILE` (the app is the agent's name)
    /// or `APP=FILE`. Repeatable.
    #[cfg(feature = "agents")]
    #[arg(long = "agent", env = "AGENTSTATE_AGENTS", value_delimiter = ',')]
    pub(crate) agents: Vec<String>,
    /// Search an app's memories by meaning too: `APP=PROVIDER:MODEL[@BASE_URL]`, `*` for every
    /// app. PROVIDER is `openai` (any OpenAI-compatible `/embeddings` server; the key in
    /// OPENAI_API_KEY, the URL in OPENAI_BASE_URL unless given) or `gemini` (GEMINI_API_KEY,
    /// GEMINI_BASE_URL). Repeatable.
    #[cfg(feature = "agents")]
    #[arg(long = "embeddings", env = "AGENTSTATE_EMBEDDINGS", value_delimiter = ',', value_parser = embedding_spec)]
    pub(crate) embeddings: Vec<ProviderSpec>,
    /// Generate an app's Memory Bank memories from conversations (Agent Engine's
    /// `memories:generate` and `:ingestEvents`) with this model: `APP=PROVIDER:MODEL[@BASE_URL]`,
    /// `*` for every app (the engine id is the app). PROVIDER is `openai` (any OpenAI-compatible
    /// `/chat/completions` server: OpenAI, vLLM, Ollama, llama.cpp; the key in OPENAI_API_KEY) or
    /// `gemini` (GEMINI_API_KEY). Repeatable.
    #[cfg(feature = "agents")]
    #[arg(long = "memory-model", env = "AGENTSTATE_MEMORY_MODELS", value_delimiter = ',', value_parser = memory_model_spec)]
    pub(crate) memory_models: Vec<ProviderSpec>,
    /// What a run does while another run of its session still goes (a user sending a second
    /// message before the first is answered): `enqueue` (waits its turn), `reject` (409 at once)
    /// or `interrupt` (the running one stops at its next event, its turn marked interrupted).
    /// Runs take turns across every server over the database.
    #[cfg(feature = "agents")]
    #[arg(long, env = "AGENTSTATE_DOUBLE_TEXTING", default_value = "enqueue", value_parser = double_texting)]
    pub(crate) double_texting: agentstate_runtime::DoubleTexting,
    /// The same for one app, over --double-texting: `APP=POLICY`. Repeatable.
    #[cfg(feature = "agents")]
    #[arg(long = "app-double-texting", env = "AGENTSTATE_APP_DOUBLE_TEXTING", value_delimiter = ',', value_parser = app_double_texting)]
    pub(crate) app_double_texting: Vec<(String, agentstate_runtime::DoubleTexting)>,
    /// How long a run's hold on its session lasts unless renewed, in seconds: the longest a
    /// server that crashed mid-run keeps other runs of the session waiting.
    #[cfg(feature = "agents")]
    #[arg(long, env = "AGENTSTATE_RUN_LEASE_TTL", value_name = "SECONDS", default_value_t = 30, value_parser = positive_seconds)]
    pub(crate) run_lease_ttl: u64,
    /// Most runs of one session waiting for their turn on this server; one more answers 503.
    #[cfg(feature = "agents")]
    #[arg(long, env = "AGENTSTATE_MAX_QUEUED_RUNS", default_value_t = 8)]
    pub(crate) max_queued_runs: usize,
    /// Longest a run waits for its turn, in seconds; then it answers 503.
    #[cfg(feature = "agents")]
    #[arg(long, env = "AGENTSTATE_MAX_RUN_WAIT", value_name = "SECONDS", default_value_t = 300, value_parser = positive_seconds)]
    pub(crate) max_run_wait: u64,
    /// Largest request body, in bytes (413 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_BODY_BYTES", default_value_t = Limits::default().max_body_bytes)]
    pub(crate) max_body_bytes: usize,
    /// Longest state key, in characters (400 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_KEY_CHARS", default_value_t = Limits::default().max_key_chars)]
    pub(crate) max_key_chars: usize,
    /// Deepest nesting of a state value (400 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_JSON_DEPTH", default_value_t = Limits::default().max_json_depth)]
    pub(crate) max_json_depth: usize,
    /// Largest state one request may write, in bytes of JSON (413 beyond).
    #[arg(long, env = "AGENTSTATE_MAX_STATE_BYTES", default_value_t = Limits::default().max_state_bytes)]
    pub(crate) max_state_bytes: usize,
    /// Largest artifact a save takes, in bytes of its payload and metadata (413 beyond); the
    /// artifact routes read bodies up to this (base64) instead of --max-body-bytes.
    #[arg(long, env = "AGENTSTATE_MAX_ARTIFACT_BYTES", default_value_t = Limits::default().max_artifact_bytes)]
    pub(crate) max_artifact_bytes: usize,
    /// Sessions created without `ttl` or `expireTime` expire this many seconds after creation
    /// (default: never).
    #[arg(long, env = "AGENTSTATE_SESSION_TTL", value_name = "SECONDS", value_parser = positive_seconds)]
    pub(crate) session_ttl: Option<u64>,
    /// The same for one app, over --session-ttl: `APP=SECONDS`. Repeatable.
    #[arg(long = "app-session-ttl", env = "AGENTSTATE_APP_SESSION_TTLS", value_delimiter = ',', value_parser = app_seconds)]
    pub(crate) app_session_ttl: Vec<(String, u64)>,
    /// Memories written without a time to live of their own expire this many seconds after they
    /// are written (default: never).
    #[arg(long, env = "AGENTSTATE_MEMORY_TTL", value_name = "SECONDS", value_parser = positive_seconds)]
    pub(crate) memory_ttl: Option<u64>,
    /// The same for one app's memories, over --memory-ttl: `APP=SECONDS`. Repeatable.
    #[arg(long = "app-memory-ttl", env = "AGENTSTATE_APP_MEMORY_TTLS", value_delimiter = ',', value_parser = app_seconds)]
    pub(crate) app_memory_ttl: Vec<(String, u64)>,
    /// Move an expiring session's expire time forward on every append, to now plus its app's
    /// --app-session-ttl (or --session-ttl): sessions in use never expire.
    #[arg(long, env = "AGENTSTATE_REFRESH_TTL_ON_APPEND")]
    pub(crate) refresh_ttl_on_append: bool,
    /// Remove expired sessions (and apply retention) every this many seconds (0: never).
    #[arg(long, env = "AGENTSTATE_SWEEP_INTERVAL", value_name = "SECONDS", default_value_t = 60)]
    pub(crate) sweep_interval: u64,
    #[command(flatten)]
    pub(crate) retention: RetentionArg,
    /// Close a connection whose request headers take longer than this to arrive (slow or idle
    /// clients), in seconds.
    #[arg(long, env = "AGENTSTATE_HEADER_READ_TIMEOUT_SECS", default_value_t = 10, value_parser = positive_seconds)]
    pub(crate) header_read_timeout_secs: u64,
    /// Answer 408 when a request's body takes longer than this to arrive, in seconds.
    #[arg(long, env = "AGENTSTATE_BODY_READ_TIMEOUT_SECS", default_value_t = 30, value_parser = positive_seconds)]
    pub(crate) body_read_timeout_secs: u64,
    /// Fail a session store call (create, read, list, delete, append) that takes longer than
    /// this, in seconds: the request is answered 503, retryable, instead of waiting on a stalled
    /// database (a cluster holding commits while it evicts a node, a lock held elsewhere).
    #[arg(long, env = "AGENTSTATE_STORE_TIMEOUT_SECS", default_value_t = 30, value_parser = positive_seconds)]
    pub(crate) store_timeout_secs: u64,
    /// Most connections open at once (further ones wait to be accepted).
    #[arg(long, env = "AGENTSTATE_MAX_CONNECTIONS", default_value_t = 1024)]
    pub(crate) max_connections: usize,
    /// Serve HTTPS and gRPC over TLS on --addr (no cleartext there) with this certificate, PEM:
    /// the leaf, then its chain. Read again when it changes (rotation without a restart).
    #[arg(long, env = "AGENTSTATE_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The certificate's private key, PEM (PKCS#8; RSA or ECDSA P-256). Read again when it changes.
    #[arg(long, env = "AGENTSTATE_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Accept JWTs of an OpenID provider as bearer tokens, verified with the keys at this JWKS URL
    /// (its `jwks_uri`; http only on loopback). A valid token grants the apps of its apps claim and
    /// its user's sessions (every user's with `"agentstate_admin": true`). Static tokens keep working.
    #[arg(long, env = "AGENTSTATE_JWT_JWKS_URL", value_name = "URL")]
    pub(crate) jwt_jwks_url: Option<String>,
    /// The `iss` every JWT must carry.
    #[arg(long, env = "AGENTSTATE_JWT_ISSUER", requires = "jwt_jwks_url")]
    pub(crate) jwt_issuer: Option<String>,
    /// An `aud` every JWT must carry (alone or in its list).
    #[arg(long, env = "AGENTSTATE_JWT_AUDIENCE", requires = "jwt_jwks_url")]
    pub(crate) jwt_audience: Option<String>,
    /// The claim naming the apps a JWT grants (a list, or "*").
    #[arg(long, env = "AGENTSTATE_JWT_APPS_CLAIM", default_value = "apps")]
    pub(crate) jwt_apps_claim: String,
    /// The claim naming a JWT's user.
    #[arg(long, env = "AGENTSTATE_JWT_USER_CLAIM", default_value = "sub")]
    pub(crate) jwt_user_claim: String,
    /// Mutual TLS: ask every client for a certificate signed by one of these CAs (PEM) and refuse
    /// a client without one.
    #[arg(long, env = "AGENTSTATE_TLS_CLIENT_CA", value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_client_ca: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct RetentionArg {
    /// Keep only part of an app's history: `APP=N` (the newest N events of each session),
    /// `APP=30d` (events younger than that; also h, m, s) or `APP=N:30d`. Repeatable.
    #[arg(long = "app-retention", env = "AGENTSTATE_APP_RETENTION", value_delimiter = ',', value_parser = app_retention)]
    pub(crate) app_retention: Vec<(String, agentstate::Retention)>,
}

fn app_retention(text: &str) -> Result<(String, agentstate::Retention), String> {
    let (app, spec) =
        text.split_once('=').ok_or_else(|| format!("{text:?}: expected APP=POLICY, e.g. support_bot=1000:30d"))?;
    agentstate::validate_id("app", app).map_err(|e| e.to_string())?;
    Ok((app.to_owned(), agentstate_server::parse_retention(spec)?))
}

fn positive_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

fn app_seconds(text: &str) -> Result<(String, u64), String> {
    let (app, seconds) =
        text.split_once('=').ok_or_else(|| format!("{text:?}: expected APP=SECONDS, e.g. support_bot=3600"))?;
    agentstate::validate_id("app", app).map_err(|e| e.to_string())?;
    Ok((app.to_owned(), positive_seconds(seconds)?))
}

#[cfg(feature = "agents")]
fn double_texting(text: &str) -> Result<agentstate_runtime::DoubleTexting, String> {
    text.parse()
}

#[cfg(feature = "agents")]
fn app_double_texting(text: &str) -> Result<(String, agentstate_runtime::DoubleTexting), String> {
    let (app, policy) =
        text.split_once('=').ok_or_else(|| format!("{text:?}: expected APP=POLICY, e.g. support_bot=reject"))?;
    agentstate::validate_id("app", app).map_err(|e| e.to_string())?;
    Ok((app.to_owned(), policy.parse()?))
}

fn key_value(text: &str) -> Result<(String, serde_json::Value), String> {
    let (key, value) = text.split_once('=').ok_or_else(|| format!("{text:?}: expected KEY=VALUE, e.g. visits=3"))?;
    let value = serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_owned()));
    Ok((key.to_owned(), value))
}

/// The direction of `sessions list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ListOrder {
    /// Oldest first.
    Asc,
    /// Newest first.
    Desc,
}

/// The time `sessions list` orders by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ListBy {
    /// The last update.
    Update,
    /// The creation.
    Create,
}

#[derive(Subcommand)]
pub(crate) enum SessionsCommand {
    /// List the sessions of an app (or of one user), oldest update first (or newest, or by
    /// creation), of those every filter given admits.
    List {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// Only this user's sessions.
        #[arg(long)]
        user: Option<String>,
        /// Oldest first, or newest first.
        #[arg(long, value_enum, default_value_t = ListOrder::Asc)]
        order: ListOrder,
        /// The time to order by.
        #[arg(long, value_enum, default_value_t = ListBy::Update)]
        by: ListBy,
        /// Only sessions with this label (KEY=VALUE); repeat for several.
        #[arg(long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// Only sessions with this display name.
        #[arg(long)]
        display_name: Option<String>,
        /// Only sessions whose session-scope key holds this JSON scalar (KEY=JSON, e.g.
        /// stage=2 or name='"Ada"'); repeat for several.
        #[arg(long = "state", value_name = "KEY=JSON")]
        state: Vec<String>,
        /// A filter in Agent Engine's syntax, with the conditions above, e.g.
        /// 'update_time>="2026-11-01T00:00:00Z" AND labels.team="support"'.
        #[arg(long)]
        filter: Option<String>,
        /// At most this many sessions.
        #[arg(long)]
        limit: Option<usize>,
        /// Skip this many sessions first.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Print how many sessions there are instead of listing them.
        #[arg(long, conflicts_with_all = ["limit", "offset"])]
        count: bool,
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
    /// Print a session's timeline: its creation state, then each event with what it set, changed
    /// and deleted (rewound events marked).
    History {
        #[command(flatten)]
        db: DbArg,
        /// The app.
        app: String,
        /// The user.
        user: String,
        /// The session id.
        session: String,
        /// One JSON document per line instead of text: the creation state, then each event's diff.
        #[arg(long)]
        json: bool,
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
        output: Option<PathBuf>,
    },
    /// Read sessions written by `export` into a database (their state as exported; events are
    /// stored as history, their deltas not applied again).
    Import {
        #[command(flatten)]
        db: DbArg,
        /// Read this file instead of standard input.
        #[arg(long, short)]
        input: Option<PathBuf>,
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

/// One `--embeddings` or `--memory-model` entry.
#[cfg(feature = "agents")]
#[derive(Debug, Clone)]
pub(crate) struct ProviderSpec {
    /// `None`: every app.
    pub(crate) app: Option<String>,
    /// `openai` or `gemini`.
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) base_url: Option<String>,
}

#[cfg(feature = "agents")]
fn embedding_spec(text: &str) -> Result<ProviderSpec, String> {
    provider_spec(text, "e.g. support_bot=openai:text-embedding-3-small or *=gemini:gemini-embedding-001")
}

#[cfg(feature = "agents")]
fn memory_model_spec(text: &str) -> Result<ProviderSpec, String> {
    provider_spec(
        text,
        "e.g. 4242=openai:gpt-4o-mini, *=openai:llama3.2@http://127.0.0.1:11434/v1 or *=gemini:gemini-2.5-flash",
    )
}

#[cfg(feature = "agents")]
fn provider_spec(text: &str, example: &str) -> Result<ProviderSpec, String> {
    let (app, rest) =
        text.split_once('=').ok_or_else(|| format!("{text:?}: expected APP=PROVIDER:MODEL, {example}"))?;
    let (provider, model) =
        rest.split_once(':').ok_or_else(|| format!("{text:?}: expected APP=PROVIDER:MODEL, {example}"))?;
    if !matches!(provider, "openai" | "gemini") {
        return Err(format!("{text:?}: the provider is openai or gemini, not {provider:?}"));
    }
    let (model, base_url) = match model.split_once('@') {
        Some((model, url)) if url.starts_with("http://") || url.starts_with("https://") => {
            (model, Some(url.to_owned()))
        }
        Some((_, url)) => return Err(format!("{text:?}: {url:?} is not an http:// or https:// URL")),
        None => (model, None),
    };
    if model.is_empty() {
        return Err(format!("{text:?}: the model is missing, {example}"));
    }
    let app = match app {
        "*" => None,
        app => {
            agentstate::validate_id("app", app).map_err(|e| e.to_string())?;
            Some(app.to_owned())
        }
    };
    Ok(ProviderSpec { app, provider: provider.to_owned(), model: model.to_owned(), base_url })
}
