//! The backend a `--db` URL names: a SQL database, Redis (`redis://…`, `rediss://…`), or the
//! Agent Engine Sessions API (`agentengine://…`, Google's managed service or another agentstate
//! server).

use std::fmt;

use std::sync::Arc;

use agentstate::SessionService;
use agentstate::crypt::{EncryptedStore, KeyRing, refuse_if_encrypted};
use agentstate::store::SessionStore;
use agentstate_redis::{RedisStore, RedisUrl};
use agentstate_sql::{DatabaseUrl, SqlStore};
use agentstate_vertex::{Builder, Credentials, VertexAiStore};
use anyhow::{Context, bail};

use super::args::DbArg;

/// Environment variables the `agentengine://` backend reads its credentials from (never the
/// URL, which is logged).
const API_KEY_ENV: &str = "GOOGLE_API_KEY";
const TOKEN_ENV: &str = "AGENTSTATE_VERTEX_TOKEN";

/// An opened backend: its store, plain or behind encryption at rest.
pub(crate) enum Backend {
    Plain(Arc<dyn SessionStore>),
    Encrypted(Arc<EncryptedStore<Arc<dyn SessionStore>>>),
}

impl Backend {
    /// The store, whatever its stack.
    pub(crate) fn store(&self) -> Arc<dyn SessionStore> {
        match self {
            Self::Plain(store) => Arc::clone(store),
            Self::Encrypted(store) => Arc::clone(store) as Arc<dyn SessionStore>,
        }
    }

    /// The service over it, with no policies.
    pub(crate) fn service(&self) -> SessionService {
        SessionService::shared(self.store())
    }
}

/// What a backend is, for logs: the URL without its password.
pub(crate) struct Shown(String);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Opens the backend `db` names, behind encryption at rest when it gives keys; refuses an
/// encrypted database without them.
pub(crate) async fn open(db: &DbArg) -> anyhow::Result<(Backend, Shown)> {
    let (backend, shown) = open_url(&db.db).await?;
    let keys = match (&db.encryption_keys_file, &db.encryption_keys) {
        (Some(path), _) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading encryption keys from {}", path.display()))?,
        ),
        (None, Some(keys)) => Some(keys.clone()),
        (None, None) => None,
    };
    match keys {
        Some(text) => {
            let keys = KeyRing::parse(&text)?;
            let store = EncryptedStore::open(backend, keys).await.with_context(|| format!("opening {shown}"))?;
            Ok((Backend::Encrypted(Arc::new(store)), shown))
        }
        None => {
            refuse_if_encrypted(backend.as_ref()).await.with_context(|| format!("opening {shown}"))?;
            Ok((Backend::Plain(backend), shown))
        }
    }
}

/// Opens the store named by `url`, naming it (without secrets) if that fails.
async fn open_url(url: &str) -> anyhow::Result<(Arc<dyn SessionStore>, Shown)> {
    if url.starts_with("agentengine://") {
        let store = vertex(url, |name| std::env::var(name).ok().filter(|v| !v.is_empty())).await?;
        return Ok((Arc::new(store), Shown(url.to_owned())));
    }
    if is_redis(url) {
        let url = RedisUrl::parse(url)?;
        let store = RedisStore::open(&url).await?;
        return Ok((Arc::new(store), Shown(url.to_string())));
    }
    let (store, url) = open_sql(url).await?;
    Ok((Arc::new(store), Shown(url.to_string())))
}

/// Whether `url` names a Redis server.
pub(crate) fn is_redis(url: &str) -> bool {
    url.starts_with("redis://") || url.starts_with("rediss://")
}

/// Opens the SQL database named by `url`, for the commands that only a database can serve.
pub(crate) async fn open_sql(url: &str) -> anyhow::Result<(SqlStore, DatabaseUrl)> {
    if url.starts_with("agentengine://") {
        bail!("this command works on a SQL database; {url} is the managed service's API");
    }
    if is_redis(url) {
        bail!("this command works on a SQL database; Redis needs no schema");
    }
    let url = DatabaseUrl::parse(url)?;
    let service = SqlStore::open(&url).await.with_context(|| format!("opening {url}"))?;
    Ok((service, url))
}

/// The managed service's client for `url`: credentials from `GOOGLE_API_KEY` (express mode) or
/// `AGENTSTATE_VERTEX_TOKEN` (a bearer token), else, built with `vertex-adc` and talking to
/// Google, Application Default Credentials; without an endpoint, project or key, the project and
/// location from `GOOGLE_CLOUD_PROJECT` and `GOOGLE_CLOUD_LOCATION`, as ADK reads them.
async fn vertex(url: &str, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<VertexAiStore> {
    let mut builder = Builder::from_url(url)?;
    let endpoint = url.contains("endpoint=");
    let explicit = endpoint || url.contains("project=") || url.contains("/reasoningEngines/");
    let (key, token) = (env(API_KEY_ENV), env(TOKEN_ENV));
    if !explicit && key.is_none() {
        match (env("GOOGLE_CLOUD_PROJECT"), env("GOOGLE_CLOUD_LOCATION")) {
            (Some(project), Some(location)) => builder = builder.project(project).location(location),
            _ => bail!(
                "{url}: say where the sessions are: an endpoint (?endpoint=http://…), a full engine name \
                 (agentengine://projects/P/locations/L/reasoningEngines/ID), GOOGLE_CLOUD_PROJECT and \
                 GOOGLE_CLOUD_LOCATION, or {API_KEY_ENV} for express mode"
            ),
        }
    }
    let credentials = match (key, token) {
        (Some(_), Some(_)) => bail!("set {API_KEY_ENV} or {TOKEN_ENV}, not both"),
        (Some(key), None) => Credentials::api_key(key),
        (None, Some(token)) => Credentials::bearer(token),
        (None, None) => default_credentials(endpoint).await?,
    };
    Ok(builder.credentials(credentials).build()?)
}

/// Credentials when none are given: none for an agentstate endpoint; for Google, Application
/// Default Credentials when built with them.
#[allow(clippy::unused_async)]
async fn default_credentials(endpoint: bool) -> anyhow::Result<Credentials> {
    #[cfg(feature = "vertex-adc")]
    if !endpoint {
        return Credentials::application_default()
            .await
            .map_err(|e| anyhow::anyhow!("no Google credentials ({e}); set {API_KEY_ENV} or {TOKEN_ENV}"));
    }
    let _ = endpoint;
    Ok(Credentials::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[tokio::test]
    async fn agentengine_urls_take_credentials_and_places_from_the_environment() {
        assert!(vertex("agentengine://1?endpoint=http://127.0.0.1:1", env(&[])).await.is_ok());
        assert!(vertex("agentengine://1", env(&[("GOOGLE_API_KEY", "k")])).await.is_ok());
        let token =
            env(&[("GOOGLE_CLOUD_PROJECT", "p"), ("GOOGLE_CLOUD_LOCATION", "l"), ("AGENTSTATE_VERTEX_TOKEN", "t")]);
        assert!(vertex("agentengine://1", token).await.is_ok());
        let nowhere = vertex("agentengine://1", env(&[])).await.unwrap_err().to_string();
        assert!(nowhere.contains("say where the sessions are"), "{nowhere}");
        let both = env(&[("GOOGLE_API_KEY", "k"), ("AGENTSTATE_VERTEX_TOKEN", "t")]);
        assert!(vertex("agentengine://1", both).await.is_err());
    }
}
