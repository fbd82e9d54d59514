//! How requests prove who sends them: an API key (express mode), an OAuth access token, or a
//! provider that mints tokens (Application Default Credentials with the `adc` feature).

use std::fmt;
use std::sync::Arc;

use agentstate::BoxError;
use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};

/// Mints OAuth access tokens, refreshing them as they expire. Implement it to plug in any
/// credential source; `Credentials::application_default` is one (feature `adc`).
#[async_trait]
pub trait TokenProvider: Send + Sync {
    /// A token valid for at least the next request.
    async fn token(&self) -> Result<SecretString, BoxError>;
}

/// The credentials sent with every request. `Debug` never shows a secret.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Credentials {
    /// Nothing: an agentstate server without access tokens.
    #[default]
    None,
    /// An API key, sent as `x-goog-api-key` (Agent Engine express mode; agentstate servers accept
    /// their access tokens this way too).
    ApiKey(SecretString),
    /// A fixed bearer token: an agentstate access token, or a short-lived OAuth token.
    Bearer(SecretString),
    /// Bearer tokens from a provider, asked before each request.
    Provider(Arc<dyn TokenProvider>),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "Credentials::None",
            Self::ApiKey(_) => "Credentials::ApiKey([redacted])",
            Self::Bearer(_) => "Credentials::Bearer([redacted])",
            Self::Provider(_) => "Credentials::Provider(..)",
        })
    }
}

impl Credentials {
    /// An API key (`x-goog-api-key`).
    pub fn api_key(key: impl Into<String>) -> Self {
        Self::ApiKey(SecretString::from(key.into()))
    }

    /// A fixed bearer token.
    pub fn bearer(token: impl Into<String>) -> Self {
        Self::Bearer(SecretString::from(token.into()))
    }

    /// Google's Application Default Credentials: `GOOGLE_APPLICATION_CREDENTIALS`, then gcloud's
    /// user credentials, then the metadata server of the machine it runs on.
    ///
    /// # Errors
    /// When none of them is available.
    #[cfg(feature = "adc")]
    pub async fn application_default() -> Result<Self, BoxError> {
        let provider = gcp_auth::provider().await?;
        Ok(Self::Provider(Arc::new(ApplicationDefault(provider))))
    }

    /// `request` with the credentials' header.
    pub(crate) async fn apply(&self, request: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, BoxError> {
        Ok(match self {
            Self::None => request,
            Self::ApiKey(key) => request.header("x-goog-api-key", sensitive(key.expose_secret())?),
            Self::Bearer(token) => request.header(reqwest::header::AUTHORIZATION, bearer(token)?),
            Self::Provider(provider) => {
                request.header(reqwest::header::AUTHORIZATION, bearer(&provider.token().await?)?)
            }
        })
    }
}

fn sensitive(value: &str) -> Result<reqwest::header::HeaderValue, BoxError> {
    let mut value = reqwest::header::HeaderValue::from_str(value)
        .map_err(|_| "the credential holds characters a header cannot carry")?;
    value.set_sensitive(true);
    Ok(value)
}

fn bearer(token: &SecretString) -> Result<reqwest::header::HeaderValue, BoxError> {
    sensitive(&format!("Bearer {}", token.expose_secret()))
}

/// The scope Vertex AI asks for.
#[cfg(feature = "adc")]
const CLOUD_PLATFORM: &[&str] = &["https://www.googleapis.com/auth/cloud-platform"];

#[cfg(feature = "adc")]
struct ApplicationDefault(Arc<dyn gcp_auth::TokenProvider>);

#[cfg(feature = "adc")]
#[async_trait]
impl TokenProvider for ApplicationDefault {
    async fn token(&self) -> Result<SecretString, BoxError> {
        let token = self.0.token(CLOUD_PLATFORM).await?;
        Ok(SecretString::from(token.as_str().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_a_secret() {
        for credentials in [Credentials::api_key("key-0123456789"), Credentials::bearer("token-0123456789")] {
            let shown = format!("{credentials:?}");
            assert!(!shown.contains("0123456789"), "{shown}");
        }
    }

    #[tokio::test]
    async fn headers_are_marked_sensitive() {
        let client = reqwest::Client::new();
        let request =
            Credentials::bearer("t-1").apply(client.get("http://127.0.0.1:9/")).await.unwrap().build().unwrap();
        let header = request.headers().get(reqwest::header::AUTHORIZATION).unwrap();
        assert!(header.is_sensitive());
        assert_eq!(header.to_str().unwrap(), "Bearer t-1");
        let request =
            Credentials::api_key("k-1").apply(client.get("http://127.0.0.1:9/")).await.unwrap().build().unwrap();
        assert!(request.headers().get("x-goog-api-key").unwrap().is_sensitive());
        assert!(Credentials::bearer("bad\nvalue").apply(client.get("http://127.0.0.1:9/")).await.is_err());
    }
}
