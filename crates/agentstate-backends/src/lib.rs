//! Opens the backend a URL names, as `agentstate serve --db` takes it: a SQL database
//! (`sqlite://…`, `postgres://…`, `mysql://…`, PostgreSQL with a host list), Redis (`redis://…`,
//! `rediss://…`, a cluster with `?cluster=true`, `redis+sentinel://…`), or the Agent Engine Sessions API (`agentengine://…`, Google's managed
//! service or another agentstate server). One place for every program that opens stores by URL:
//! the server and the ADK-Rust adapter answer the same URLs with the same errors.
//!
//! ```no_run
//! # async fn run() -> Result<(), agentstate_backends::OpenError> {
//! let store = agentstate_backends::open("sqlite://agentstate.db").await?;
//! let sessions = agentstate::SessionService::shared(store);
//! # Ok(()) }
//! ```

use std::sync::Arc;

mod files;
pub use files::{ArtifactFiles, DEFAULT_INLINE_BELOW, FILE_ENTRY};

use agentstate::store::SessionStore;
use agentstate_redis::{ConnectError, RedisStore, RedisUrl, RedisUrlError};
use agentstate_sql::{DatabaseUrl, SqlStore};
use agentstate_vertex::{Builder, ConfigError, Credentials, VertexAiStore};

/// Where `agentengine://` URLs take an API key from (express mode); never from the URL, which
/// is logged.
pub const API_KEY_ENV: &str = "GOOGLE_API_KEY";
/// Where `agentengine://` URLs take a bearer token from.
pub const TOKEN_ENV: &str = "AGENTSTATE_VERTEX_TOKEN";

/// Why a backend could not be opened. Messages name the backend without its password.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL is not a backend's, or says too little.
    #[error("{0}")]
    Url(String),
    /// A malformed database URL.
    #[error(transparent)]
    DatabaseUrl(agentstate::Error),
    /// The SQL database could not be opened.
    #[error("opening {url}: {source}")]
    Sql {
        /// The database, without its password.
        url: String,
        /// Why.
        #[source]
        source: agentstate::Error,
    },
    /// A malformed Redis URL.
    #[error(transparent)]
    RedisUrl(#[from] RedisUrlError),
    /// Redis could not be reached.
    #[error(transparent)]
    Redis(#[from] ConnectError),
    /// The managed service's client could not be configured.
    #[error(transparent)]
    Vertex(#[from] ConfigError),
}

/// Whether `url` names a Redis server.
pub fn is_redis(url: &str) -> bool {
    url.starts_with("redis://") || url.starts_with("rediss://") || url.starts_with("redis+sentinel://")
}

/// Whether `url` names the Agent Engine Sessions API.
pub fn is_agent_engine(url: &str) -> bool {
    url.starts_with("agentengine://")
}

/// Opens the store `url` names, with the managed service's credentials from the environment
/// (see [`agent_engine`]).
pub async fn open(url: &str) -> Result<Arc<dyn SessionStore>, OpenError> {
    Ok(open_named(url).await?.0)
}

/// [`open`], and the backend as logs may show it (no password).
pub async fn open_named(url: &str) -> Result<(Arc<dyn SessionStore>, String), OpenError> {
    if is_agent_engine(url) {
        let store = agent_engine(url, |name| std::env::var(name).ok().filter(|v| !v.is_empty())).await?;
        return Ok((Arc::new(store), url.to_owned()));
    }
    if is_redis(url) {
        let url = RedisUrl::parse(url)?;
        let store = RedisStore::open(&url).await?;
        return Ok((Arc::new(store), url.to_string()));
    }
    let (store, url) = open_sql(url).await?;
    Ok((Arc::new(store), url.to_string()))
}

/// Opens the SQL database `url` names, for what only a database can do (schemas, imports).
pub async fn open_sql(url: &str) -> Result<(SqlStore, DatabaseUrl), OpenError> {
    if is_agent_engine(url) {
        return Err(OpenError::Url(format!(
            "this command works on a SQL database; {url} is the managed service's API"
        )));
    }
    if is_redis(url) {
        return Err(OpenError::Url("this command works on a SQL database; Redis needs no schema".into()));
    }
    let parsed = DatabaseUrl::parse(url).map_err(OpenError::DatabaseUrl)?;
    let store = SqlStore::open(&parsed).await.map_err(|source| OpenError::Sql { url: parsed.to_string(), source })?;
    Ok((store, parsed))
}

/// The managed service's client for `url`: credentials from [`API_KEY_ENV`] (express mode) or
/// [`TOKEN_ENV`] (a bearer token), else, built with `vertex-adc` and talking to Google,
/// Application Default Credentials; without an endpoint, project or key, the project and
/// location from `GOOGLE_CLOUD_PROJECT` and `GOOGLE_CLOUD_LOCATION`, as ADK reads them. `env`
/// reads the environment.
pub async fn agent_engine(url: &str, env: impl Fn(&str) -> Option<String>) -> Result<VertexAiStore, OpenError> {
    let mut builder = Builder::from_url(url)?;
    let endpoint = url.contains("endpoint=");
    let explicit = endpoint || url.contains("project=") || url.contains("/reasoningEngines/");
    let (key, token) = (env(API_KEY_ENV), env(TOKEN_ENV));
    if !explicit && key.is_none() {
        match (env("GOOGLE_CLOUD_PROJECT"), env("GOOGLE_CLOUD_LOCATION")) {
            (Some(project), Some(location)) => builder = builder.project(project).location(location),
            _ => {
                return Err(OpenError::Url(format!(
                    "{url}: say where the sessions are: an endpoint (?endpoint=http://…), a full engine name \
                     (agentengine://projects/P/locations/L/reasoningEngines/ID), GOOGLE_CLOUD_PROJECT and \
                     GOOGLE_CLOUD_LOCATION, or {API_KEY_ENV} for express mode"
                )));
            }
        }
    }
    let credentials = match (key, token) {
        (Some(_), Some(_)) => return Err(OpenError::Url(format!("set {API_KEY_ENV} or {TOKEN_ENV}, not both"))),
        (Some(key), None) => Credentials::api_key(key),
        (None, Some(token)) => Credentials::bearer(token),
        (None, None) => default_credentials(endpoint).await?,
    };
    Ok(builder.credentials(credentials).build()?)
}

/// Credentials when none are given: none for an agentstate endpoint; for Google, Application
/// Default Credentials when built with them.
#[allow(clippy::unused_async)]
async fn default_credentials(endpoint: bool) -> Result<Credentials, OpenError> {
    #[cfg(feature = "vertex-adc")]
    if !endpoint {
        return Credentials::application_default()
            .await
            .map_err(|e| OpenError::Url(format!("no Google credentials ({e}); set {API_KEY_ENV} or {TOKEN_ENV}")));
    }
    let _ = endpoint;
    Ok(Credentials::None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[tokio::test]
    async fn agentengine_urls_take_credentials_and_places_from_the_environment() {
        assert!(agent_engine("agentengine://1?endpoint=http://127.0.0.1:1", env(&[])).await.is_ok());
        assert!(agent_engine("agentengine://1", env(&[("GOOGLE_API_KEY", "k")])).await.is_ok());
        let token =
            env(&[("GOOGLE_CLOUD_PROJECT", "p"), ("GOOGLE_CLOUD_LOCATION", "l"), ("AGENTSTATE_VERTEX_TOKEN", "t")]);
        assert!(agent_engine("agentengine://1", token).await.is_ok());
        let nowhere = agent_engine("agentengine://1", env(&[])).await.unwrap_err().to_string();
        assert!(nowhere.contains("say where the sessions are"), "{nowhere}");
        let both = env(&[("GOOGLE_API_KEY", "k"), ("AGENTSTATE_VERTEX_TOKEN", "t")]);
        assert!(agent_engine("agentengine://1", both).await.is_err());
    }

    #[tokio::test]
    async fn bad_urls_say_what_is_wrong() {
        let scheme = open("ftp://x").await.err().unwrap().to_string();
        assert!(scheme.contains("unsupported scheme"), "{scheme}");
        let redis = open("redis://").await.err().unwrap().to_string();
        assert!(!redis.is_empty());
        let sql = open_sql("redis://127.0.0.1").await.err().unwrap().to_string();
        assert!(sql.contains("Redis needs no schema"), "{sql}");
    }
}
