//! The backend a `--db` URL names: a SQL database, Redis (`redis://…`, `rediss://…`,
//! `redis+sentinel://…`), or the
//! Agent Engine Sessions API (`agentengine://…`, Google's managed service or another agentstate
//! server).

use std::fmt;

use std::sync::Arc;

use agentstate::SessionService;
use agentstate::crypt::{EncryptedStore, KeyRing, refuse_if_encrypted};
use agentstate::store::SessionStore;
use agentstate_sql::{DatabaseUrl, SqlStore};
use anyhow::Context;

use super::args::DbArg;

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
    let (mut backend, shown) = open_url(&db.db).await?;
    if let Some(dir) = &db.artifacts_dir {
        let files = agentstate_backends::ArtifactFiles::open(backend, dir)
            .with_context(|| format!("keeping artifact files in {} beside {shown}", dir.display()))?;
        backend = Arc::new(files.inline_below(db.artifacts_inline_below));
    }
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

/// Opens the store named by `url`, naming it (without secrets).
async fn open_url(url: &str) -> anyhow::Result<(Arc<dyn SessionStore>, Shown)> {
    let (store, shown) = agentstate_backends::open_named(url).await?;
    Ok((store, Shown(shown)))
}

pub(crate) use agentstate_backends::is_redis;

/// Opens the SQL database named by `url`, for the commands that only a database can serve.
pub(crate) async fn open_sql(url: &str) -> anyhow::Result<(SqlStore, DatabaseUrl)> {
    Ok(agentstate_backends::open_sql(url).await?)
}
