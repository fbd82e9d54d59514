//! Where the sessions live and how to reach them: [`Builder`], and the `agentengine://` URLs of
//! ADK's command line.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;

use crate::VertexAiStore;
use crate::auth::Credentials;
use crate::http::Client;

/// How long one request may take, unless [`Builder::timeout`] says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A configuration that cannot reach a service.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The engine is neither an id nor `projects/P/locations/L/reasoningEngines/ID`.
    #[error("engine {0:?} is neither an id nor projects/PROJECT/locations/LOCATION/reasoningEngines/ID")]
    Engine(String),
    /// A project without a location, or a location without a project.
    #[error("give the project and the location together (or neither, for express mode or an endpoint)")]
    ProjectWithoutLocation,
    /// The engine's name names another project or location than the one configured.
    #[error("the engine {engine:?} is in another project or location than {configured:?}")]
    EngineElsewhere {
        /// The engine's full name.
        engine: String,
        /// `projects/P/locations/L` as configured.
        configured: String,
    },
    /// The endpoint or the `agentengine://` URL does not parse.
    #[error("{what}: {message}")]
    Url {
        /// What was being read.
        what: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The HTTP client cannot be built (its TLS backend failed to load).
    #[error("the HTTP client cannot be built: {0}")]
    Client(#[source] reqwest::Error),
    /// The CA bundle ([`Builder::ca_file`]) cannot be read or holds no PEM certificate.
    #[error("CA bundle {path}: {message}")]
    Ca {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Configures a [`VertexAiStore`].
///
/// Three ways to point it:
/// - **Google, with a project**: [`project`](Self::project) and [`location`](Self::location),
///   OAuth credentials ([`Credentials::Provider`], or
///   `Credentials::application_default` with the `adc` feature);
/// - **Google, express mode**: an API key ([`Credentials::ApiKey`]) and no project;
/// - **an agentstate server**: its [`endpoint`](Self::endpoint), with its access token if it has
///   any. Against agentstate the client also uses the two extensions the server offers (one
///   consistent read of a session with its events; appends refused when the handle is stale),
///   so every guarantee of [`SessionService`](agentstate::SessionService) holds.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Builder {
    project: Option<String>,
    location: Option<String>,
    engine: Option<String>,
    endpoint: Option<String>,
    credentials: Credentials,
    extensions: Option<bool>,
    timeout: Option<Duration>,
    ca_file: Option<std::path::PathBuf>,
}

impl Builder {
    /// The Google Cloud project.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// The region of the engine, e.g. `us-central1`.
    pub fn location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }

    /// The Agent Engine that keeps every session, as an id or a full resource name
    /// (`projects/P/locations/L/reasoningEngines/ID`, which also sets the project and location).
    /// Without it, each session's app name is its engine id, as in ADK.
    pub fn engine(mut self, engine: impl Into<String>) -> Self {
        self.engine = Some(engine.into());
        self
    }

    /// The server's base URL (e.g. `http://127.0.0.1:8000`) instead of Google's.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The credentials sent with every request.
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// Whether to use agentstate's extensions. On by default with an [`endpoint`](Self::endpoint),
    /// off against Google (which refuses what it does not know).
    pub fn agentstate_extensions(mut self, on: bool) -> Self {
        self.extensions = Some(on);
        self
    }

    /// How long one request may take (30 s by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Trusts the CAs in this PEM file (beside the system's) for an `https` endpoint: an
    /// agentstate server serving TLS with a certificate of a private CA (`serve --tls-cert`).
    pub fn ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Reads an `agentengine://` URL, as ADK's command line takes them: `agentengine://ID`,
    /// `agentengine://projects/P/locations/L/reasoningEngines/ID`, or `agentengine://` alone (each
    /// app name is its engine id); query parameters `endpoint`, `project`, `location`,
    /// `extensions` (`true`/`false`) and `ca_file` set the matching options. Secrets never go in the URL: set
    /// [`credentials`](Self::credentials).
    ///
    /// # Errors
    /// When the URL does not parse or has an unknown parameter.
    pub fn from_url(url: &str) -> Result<Self, ConfigError> {
        let bad = |message: String| ConfigError::Url { what: "agentengine URL", message };
        let rest = url
            .strip_prefix("agentengine://")
            .ok_or_else(|| bad(format!("{url:?} does not start with agentengine://")))?;
        let (engine, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut builder = Self::default();
        let engine = engine.trim_end_matches('/');
        if !engine.is_empty() {
            builder.engine = Some(engine.to_owned());
        }
        let parsed = Url::parse(&format!("agentengine://engine?{query}")).map_err(|e| bad(e.to_string()))?;
        for (name, value) in parsed.query_pairs() {
            let value = value.into_owned();
            match name.as_ref() {
                "endpoint" => builder.endpoint = Some(value),
                "project" => builder.project = Some(value),
                "location" => builder.location = Some(value),
                "ca_file" => builder.ca_file = Some(value.into()),
                "extensions" => {
                    builder.extensions =
                        Some(value.parse().map_err(|_| bad(format!("extensions={value:?}: say true or false")))?);
                }
                other => {
                    return Err(bad(format!(
                        "unknown parameter {other:?}; known: endpoint, project, location, extensions, ca_file"
                    )));
                }
            }
        }
        Ok(builder)
    }

    /// The service.
    ///
    /// # Errors
    /// When the options contradict each other or the endpoint is not a URL.
    pub fn build(self) -> Result<VertexAiStore, ConfigError> {
        let (mut project, mut location) = (self.project, self.location);
        let engine = match self.engine {
            Some(name) if name.contains('/') => {
                let full = EngineName::parse(&name)?;
                let configured = project.as_deref().zip(location.as_deref());
                if configured.is_some_and(|(p, l)| (p, l) != (full.project.as_str(), full.location.as_str())) {
                    return Err(ConfigError::EngineElsewhere {
                        engine: name,
                        configured: format!(
                            "projects/{}/locations/{}",
                            project.unwrap_or_default(),
                            location.unwrap_or_default()
                        ),
                    });
                }
                project = Some(full.project);
                location = Some(full.location);
                Some(full.id)
            }
            Some(id) if id.is_empty() => return Err(ConfigError::Engine(id)),
            other => other,
        };
        let parent = match (project, location) {
            (Some(project), Some(location)) => Some((project, location)),
            (None, None) => None,
            _ => return Err(ConfigError::ProjectWithoutLocation),
        };
        let base = match (&self.endpoint, &parent) {
            (Some(endpoint), _) => endpoint.trim_end_matches('/').to_owned(),
            (None, Some((_, location))) => format!("https://{location}-aiplatform.googleapis.com"),
            (None, None) => "https://aiplatform.googleapis.com".to_owned(),
        };
        let mut base =
            Url::parse(&base).map_err(|e| ConfigError::Url { what: "endpoint", message: format!("{base:?}: {e}") })?;
        if base.cannot_be_a_base() || !matches!(base.scheme(), "http" | "https") {
            return Err(ConfigError::Url { what: "endpoint", message: format!("{base} is not an http(s) URL") });
        }
        let shown = base.to_string();
        base.path_segments_mut()
            .map_err(|()| ConfigError::Url { what: "endpoint", message: format!("{shown} cannot take a path") })?
            .pop_if_empty()
            .push("v1beta1");
        let prefix: Vec<String> = match &parent {
            Some((project, location)) => vec!["projects".into(), project.clone(), "locations".into(), location.clone()],
            None => Vec::new(),
        };
        let extensions = self.extensions.unwrap_or(self.endpoint.is_some());
        let timeout = self.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let mut http = reqwest::Client::builder().timeout(timeout);
        if let Some(path) = &self.ca_file {
            for certificate in ca_bundle(path)? {
                http = http.add_root_certificate(certificate);
            }
        }
        let http = http.build().map_err(ConfigError::Client)?;
        Ok(VertexAiStore { client: Arc::new(Client::new(http, base, prefix, self.credentials, extensions)), engine })
    }
}

/// The certificates of a PEM CA bundle; at least one.
fn ca_bundle(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>, ConfigError> {
    let bad = |message: String| ConfigError::Ca { path: path.display().to_string(), message };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
    if certificates.is_empty() {
        return Err(bad("holds no PEM certificate".to_owned()));
    }
    Ok(certificates)
}

/// `projects/P/locations/L/reasoningEngines/ID`, taken apart.
struct EngineName {
    project: String,
    location: String,
    id: String,
}

impl EngineName {
    fn parse(name: &str) -> Result<Self, ConfigError> {
        match name.trim_matches('/').split('/').collect::<Vec<_>>().as_slice() {
            ["projects", project, "locations", location, "reasoningEngines", id]
                if ![project, location, id].iter().any(|s| s.is_empty()) =>
            {
                Ok(Self { project: (*project).to_owned(), location: (*location).to_owned(), id: (*id).to_owned() })
            }
            _ => Err(ConfigError::Engine(name.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(builder: Builder) -> (String, bool, Option<String>) {
        let service = builder.build().unwrap();
        (service.client.describe(), service.client.extensions(), service.engine.clone())
    }

    #[test]
    fn google_express_and_agentstate_endpoints() {
        let (url, ext, engine) = base(Builder::default().project("p").location("europe-west4").engine("42"));
        assert_eq!(url, "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p/locations/europe-west4");
        assert_eq!((ext, engine.as_deref()), (false, Some("42")));
        let (url, ext, engine) = base(Builder::default().credentials(Credentials::api_key("k")));
        assert_eq!((url.as_str(), ext, engine), ("https://aiplatform.googleapis.com/v1beta1", false, None));
        let (url, ext, _) = base(Builder::default().endpoint("http://127.0.0.1:8000/"));
        assert_eq!((url.as_str(), ext), ("http://127.0.0.1:8000/v1beta1", true));
        let (url, ext, _) = base(Builder::default().endpoint("https://h/prefix").agentstate_extensions(false));
        assert_eq!((url.as_str(), ext), ("https://h/prefix/v1beta1", false));
    }

    #[test]
    fn a_full_engine_name_sets_project_and_location() {
        let (url, _, engine) = base(Builder::default().engine("projects/p/locations/us-central1/reasoningEngines/7"));
        assert_eq!(url, "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/us-central1");
        assert_eq!(engine.as_deref(), Some("7"));
        let elsewhere = Builder::default()
            .project("q")
            .location("us-central1")
            .engine("projects/p/locations/us-central1/reasoningEngines/7");
        assert!(matches!(elsewhere.build(), Err(ConfigError::EngineElsewhere { .. })));
        assert!(matches!(
            Builder::default().engine("projects/p/reasoningEngines/7").build(),
            Err(ConfigError::Engine(_))
        ));
        assert!(matches!(Builder::default().project("p").build(), Err(ConfigError::ProjectWithoutLocation)));
        assert!(matches!(Builder::default().endpoint("ftp://h").build(), Err(ConfigError::Url { .. })));
        assert!(matches!(Builder::default().endpoint("not a url").build(), Err(ConfigError::Url { .. })));
    }

    #[test]
    fn agentengine_urls() {
        let (url, ext, engine) = base(Builder::from_url("agentengine://123").unwrap());
        assert_eq!(
            (url.as_str(), ext, engine.as_deref()),
            ("https://aiplatform.googleapis.com/v1beta1", false, Some("123"))
        );
        let (url, _, engine) =
            base(Builder::from_url("agentengine://projects/p/locations/asia-east1/reasoningEngines/9").unwrap());
        assert_eq!(url, "https://asia-east1-aiplatform.googleapis.com/v1beta1/projects/p/locations/asia-east1");
        assert_eq!(engine.as_deref(), Some("9"));
        let (url, ext, engine) =
            base(Builder::from_url("agentengine://?endpoint=http%3A%2F%2F127.0.0.1%3A9000&extensions=true").unwrap());
        assert_eq!((url.as_str(), ext, engine), ("http://127.0.0.1:9000/v1beta1", true, None));
        assert!(Builder::from_url("postgresql://x").is_err());
        assert!(Builder::from_url("agentengine://1?api_key=k").unwrap_err().to_string().contains("unknown parameter"));
        assert!(Builder::from_url("agentengine://1?extensions=maybe").is_err());
    }
}
