//! Bearer tokens that are JWTs signed by an OpenID provider (Google, Auth0, Okta, Keycloak,
//! Entra): verified against the provider's JWKS (fetched, cached, fetched again when a token
//! names a key the cache lacks, at most once every [`REFETCH_EVERY`]), with `iss`, `aud`, `exp`
//! and `nbf` checked. A valid token grants what a tokens-file entry grants: the apps of its apps
//! claim (`apps`: a list, or `"*"`), the user of its user claim (`sub`) alone unless
//! `agentstate_admin` is true. Signatures by RS256, ES256 or EdDSA only; `none`, HMAC and keys
//! outside the set are refused. Verification by `jsonwebtoken` (its `aws_lc_rs` backend, the one
//! the rest of the workspace's Google clients already use).

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

/// What a valid token grants (the auth module makes it a permit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    /// These apps; `None`: every app.
    pub(crate) apps: Option<Vec<String>>,
    /// These users; `None`: every user.
    pub(crate) users: Option<Vec<String>>,
    /// Whether it is an admin's.
    pub(crate) admin: bool,
}

/// The least time between two fetches of the key set (a flood of tokens naming unknown keys
/// fetches it once per period).
pub const REFETCH_EVERY: Duration = Duration::from_secs(5);
/// How far `exp` and `nbf` may be off (clock skew).
const LEEWAY_SECS: u64 = 30;
/// The longest token looked at (a JWT of an OpenID provider is a few kilobytes).
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The algorithms accepted.
const ALGORITHMS: [Algorithm; 3] = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// Where the keys are and what a token must say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtConfig {
    /// The provider's JWKS URL (`jwks_uri` of its OpenID configuration); `http` only on loopback.
    pub jwks_url: String,
    /// The `iss` a token must carry, if any.
    pub issuer: Option<String>,
    /// An `aud` a token must carry (a string or one of a list), if any.
    pub audience: Option<String>,
    /// The claim naming the apps (`apps`).
    pub apps_claim: String,
    /// The claim naming the user (`sub`).
    pub user_claim: String,
    /// The least time between two fetches of the key set ([`REFETCH_EVERY`]).
    pub refetch_every: Duration,
}

impl JwtConfig {
    /// The provider's keys at `jwks_url`, the claims by their default names.
    pub fn new(jwks_url: impl Into<String>) -> Self {
        Self {
            jwks_url: jwks_url.into(),
            issuer: None,
            audience: None,
            apps_claim: "apps".to_owned(),
            user_claim: "sub".to_owned(),
            refetch_every: REFETCH_EVERY,
        }
    }
}

/// A configuration that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    /// The JWKS URL is not an https URL (or http on loopback).
    #[error("--jwt-jwks-url {0:?}: give an https:// URL (http:// only on loopback)")]
    Url(String),
    /// The HTTP client could not be built.
    #[error("the JWKS client cannot be built: {0}")]
    Client(#[source] reqwest::Error),
}

/// Verifies JWTs; shared by every request.
pub struct Jwt {
    config: JwtConfig,
    http: reqwest::Client,
    keys: RwLock<HashMap<String, Key>>,
    /// When the set was last fetched (`None`: never); held while fetching.
    fetched: tokio::sync::Mutex<Option<Instant>>,
    /// What a token of each accepted algorithm must satisfy, made once from the configuration.
    validations: Vec<(Algorithm, Validation)>,
}

impl std::fmt::Debug for Jwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwt").field("config", &self.config).finish_non_exhaustive()
    }
}

#[derive(Clone)]
struct Key {
    key: DecodingKey,
    /// The `alg` the set names for it, if it does.
    algorithm: Option<Algorithm>,
}

/// What a token signed with `alg` must satisfy: `exp` (and `nbf` when present) within the leeway,
/// the configured `iss` and `aud` when there are.
fn validation(config: &JwtConfig, alg: Algorithm) -> Validation {
    let mut validation = Validation::new(alg);
    validation.leeway = LEEWAY_SECS;
    validation.validate_nbf = true;
    validation.required_spec_claims = ["exp".to_owned()].into();
    match &config.issuer {
        Some(issuer) => {
            validation.set_issuer(&[issuer]);
            validation.required_spec_claims.insert("iss".to_owned());
        }
        None => validation.iss = None,
    }
    match &config.audience {
        Some(audience) => {
            validation.set_audience(&[audience]);
            validation.required_spec_claims.insert("aud".to_owned());
        }
        None => validation.validate_aud = false,
    }
    validation
}

impl Jwt {
    /// A verifier of `config`; the key set is fetched with the first token.
    ///
    /// # Errors
    /// When the URL is not https (or http on loopback).
    pub fn new(config: JwtConfig) -> Result<Self, JwtError> {
        let url = reqwest::Url::parse(&config.jwks_url).map_err(|_| JwtError::Url(config.jwks_url.clone()))?;
        let host = url.host_str().unwrap_or_default();
        let loopback = host == "localhost"
            || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if !(url.scheme() == "https" || (url.scheme() == "http" && loopback)) {
            return Err(JwtError::Url(config.jwks_url));
        }
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().map_err(JwtError::Client)?;
        let validations = ALGORITHMS.iter().map(|alg| (*alg, validation(&config, *alg))).collect();
        Ok(Self {
            config,
            http,
            keys: RwLock::new(HashMap::new()),
            fetched: tokio::sync::Mutex::new(None),
            validations,
        })
    }

    /// Whether `token` has a JWT's shape (three dot-separated parts), so static tokens are not
    /// sent through JWT verification.
    pub(crate) fn looks_like_jwt(token: &str) -> bool {
        token.split('.').count() == 3 && token.starts_with("eyJ")
    }

    /// What `token` grants, or why it grants nothing (for the log; never the token).
    pub(crate) async fn verify(&self, token: &str) -> Result<Grant, String> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(format!("a JWT of {} bytes, over {MAX_TOKEN_BYTES}", token.len()));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| format!("malformed JWT header: {e}"))?;
        // Only the accepted algorithms have a validation.
        let Some((_, validation)) = self.validations.iter().find(|(alg, _)| *alg == header.alg) else {
            return Err(format!("algorithm {:?} is not accepted (RS256, ES256, EdDSA)", header.alg));
        };
        let kid = header.kid.ok_or("the JWT names no key (kid)")?;
        let key = match self.key(&kid) {
            Some(key) => key,
            None => {
                self.refetch().await;
                self.key(&kid).ok_or_else(|| format!("key {kid:?} is not in the provider's key set"))?
            }
        };
        if key.algorithm.is_some_and(|a| a != header.alg) {
            return Err(format!("key {kid:?} is for another algorithm than {:?}", header.alg));
        }
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, validation)
            .map_err(|e| format!("JWT refused: {e}"))?
            .claims;
        self.permit(&claims)
    }

    fn permit(&self, claims: &Map<String, Value>) -> Result<Grant, String> {
        let (apps_claim, user_claim) = (&self.config.apps_claim, &self.config.user_claim);
        let apps = match claims.get(apps_claim) {
            Some(Value::String(all)) if all == "*" => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|a| a.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!("claim {apps_claim:?} holds something other than app names"))?,
            ),
            None => Some(Vec::new()),
            Some(_) => return Err(format!("claim {apps_claim:?} is neither \"*\" nor a list of app names")),
        };
        let admin = claims.get("agentstate_admin").and_then(Value::as_bool).unwrap_or(false);
        let users = if admin {
            None
        } else {
            let user = claims.get(user_claim).and_then(Value::as_str).filter(|u| !u.is_empty());
            Some(vec![user.ok_or(format!("the JWT has no {user_claim:?} claim naming its user"))?.to_owned()])
        };
        Ok(Grant { apps, users, admin })
    }

    fn key(&self, kid: &str) -> Option<Key> {
        self.keys.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(kid).cloned()
    }

    /// Fetches the key set again, unless it was fetched less than `refetch_every` ago (then the
    /// cache stands); concurrent callers wait for one fetch. A failed fetch keeps the keys held.
    async fn refetch(&self) {
        let mut fetched = self.fetched.lock().await;
        if fetched.is_some_and(|at| at.elapsed() < self.config.refetch_every) {
            return;
        }
        *fetched = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), url = %self.config.jwks_url, "JWKS fetched");
                *self.keys.write().unwrap_or_else(std::sync::PoisonError::into_inner) = keys;
            }
            Err(e) => {
                tracing::warn!(error = %e, url = %self.config.jwks_url, "JWKS fetch failed; keeping the keys held");
            }
        }
    }

    async fn fetch(&self) -> Result<HashMap<String, Key>, String> {
        let response = self.http.get(&self.config.jwks_url).send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("answered {}", response.status()));
        }
        let set: JwkSet = response.json().await.map_err(|e| format!("not a JWK set: {e}"))?;
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            let Some(kid) = &jwk.common.key_id else { continue };
            match DecodingKey::from_jwk(jwk) {
                Ok(key) => {
                    let algorithm = jwk.common.key_algorithm.and_then(|a| Algorithm::try_from(a).ok());
                    keys.insert(kid.clone(), Key { key, algorithm });
                }
                Err(e) => tracing::warn!(kid, error = %e, "a key of the JWKS is not usable"),
            }
        }
        Ok(keys)
    }
}
