//! `agentstate serve`: the HTTP API on a database, until ctrl-c or SIGTERM.

use std::time::Duration;

use agentstate::{Policies, SessionService};
use agentstate_server::{AppState, Connections, Jwt, JwtConfig, Limits, Sweep, Tls, TlsFiles, Tokens, app};
use anyhow::{Context, bail};

use super::args::ServeArgs;
use super::backend::open;
use super::deadline::Deadline;

impl ServeArgs {
    fn tokens(&self) -> anyhow::Result<Tokens> {
        let tokens = match (&self.tokens_file, &self.tokens) {
            (Some(_), Some(_)) => {
                bail!("give access tokens either as --tokens-file or as --tokens/AGENTSTATE_TOKENS, not both")
            }
            (Some(path), None) => Tokens::parse(
                &std::fs::read_to_string(path).with_context(|| format!("reading tokens from {}", path.display()))?,
            )?,
            (None, Some(json)) => Tokens::parse(json)?,
            (None, None) => Tokens::default(),
        };
        self.with_jwt(tokens)
    }

    /// `tokens`, also accepting JWTs when `--jwt-jwks-url` is given.
    fn with_jwt(&self, tokens: Tokens) -> anyhow::Result<Tokens> {
        let Some(url) = &self.jwt_jwks_url else { return Ok(tokens) };
        let config = JwtConfig {
            jwks_url: url.clone(),
            issuer: self.jwt_issuer.clone(),
            audience: self.jwt_audience.clone(),
            apps_claim: self.jwt_apps_claim.clone(),
            user_claim: self.jwt_user_claim.clone(),
            refetch_every: agentstate_server::REFETCH_EVERY,
        };
        Ok(tokens.with_jwt(Jwt::new(config)?))
    }

    /// The service's policies: default times to live, refresh on append, retention.
    fn policies(&self) -> Policies {
        let mut policies = Policies {
            default_ttl: self.session_ttl.map(Duration::from_secs),
            refresh_ttl_on_append: self.refresh_ttl_on_append,
            retention: self.retention.app_retention.iter().cloned().collect(),
            ..Policies::default()
        };
        for (app, seconds) in &self.app_session_ttl {
            policies = policies.app_ttl(app, Duration::from_secs(*seconds));
        }
        policies
    }

    /// Default times to live of memories.
    /// How runs of each app's sessions take turns: --double-texting, then each
    /// --app-double-texting (an app not served is a mistake worth stopping for).
    #[cfg(feature = "agents")]
    fn run_concurrency(&self, mut state: AppState) -> anyhow::Result<AppState> {
        let concurrency = agentstate_runtime::RunConcurrency {
            policy: self.double_texting,
            lease_ttl: std::time::Duration::from_secs(self.run_lease_ttl),
            max_queued: self.max_queued_runs,
            max_wait: std::time::Duration::from_secs(self.max_run_wait),
        };
        state = state.with_run_concurrency(None, &concurrency);
        for (app, policy) in &self.app_double_texting {
            if !state.serves(app) {
                bail!("--app-double-texting names app {app:?}, which no --agent serves");
            }
            let app_concurrency = agentstate_runtime::RunConcurrency { policy: *policy, ..concurrency.clone() };
            state = state.with_run_concurrency(Some(app), &app_concurrency);
        }
        Ok(state)
    }

    fn memory_ttls(&self) -> agentstate::memory::MemoryTtls {
        let mut ttls = agentstate::memory::MemoryTtls::new();
        if let Some(seconds) = self.memory_ttl {
            ttls = ttls.every_app(Duration::from_secs(seconds));
        }
        for (app, seconds) in &self.app_memory_ttl {
            ttls = ttls.app(app, Duration::from_secs(*seconds));
        }
        ttls
    }

    fn sweep(&self) -> Sweep {
        Sweep { every: (self.sweep_interval > 0).then(|| Duration::from_secs(self.sweep_interval)), ..Sweep::default() }
    }

    /// TLS, when a certificate is given (clap has checked that the key is too).
    fn tls(&self) -> anyhow::Result<Option<Tls>> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else { return Ok(None) };
        let files = TlsFiles { cert: cert.clone(), key: key.clone(), client_ca: self.tls_client_ca.clone() };
        Ok(Some(Tls::load(&files).context("loading --tls-cert, --tls-key and --tls-client-ca")?))
    }

    fn limits(&self) -> Limits {
        Limits {
            max_body_bytes: self.max_body_bytes,
            max_key_chars: self.max_key_chars,
            max_json_depth: self.max_json_depth,
            max_state_bytes: self.max_state_bytes,
            max_artifact_bytes: self.max_artifact_bytes,
        }
    }
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let tokens = args.tokens()?;
    let tls = args.tls()?;
    if !args.addr.ip().is_loopback() && !tokens.is_enabled() && !args.insecure_allow_remote {
        bail!(
            "refusing to listen on {} without access tokens: anyone who can reach it could read and change every \
             session. Listen on 127.0.0.1 behind an authenticating proxy, or pass --insecure-allow-remote.",
            args.addr
        );
    }
    let (store, url) = open(&args.db).await?;
    let bounded = Deadline::new(store.store(), Duration::from_secs(args.store_timeout_secs));
    let service = SessionService::builder(bounded)
        .policies(args.policies())
        .build()
        .with_context(|| format!("serving {url} with --refresh-ttl-on-append"))?;
    let state = AppState::new(service)
        .with_limits(args.limits())
        .with_tokens(tokens)
        .with_sweep(args.sweep())
        .with_memory_ttls(args.memory_ttls());
    #[cfg(feature = "agents")]
    let state = serve_agents(state, &args.agents)?
        .with_embedders(embedders(&args.embeddings)?)
        .with_fact_models(fact_models(&args.memory_models)?);
    #[cfg(feature = "agents")]
    let state = args.run_concurrency(state)?;
    let listener =
        tokio::net::TcpListener::bind(args.addr).await.with_context(|| format!("listening on {}", args.addr))?;
    tracing::info!(
        addr = %listener.local_addr()?,
        db = %url,
        tokens = state.tokens().len(),
        tls = tls.is_some(),
        "agentstate serving"
    );
    let sweeper = tokio::spawn(state.sweeper());
    let connections = Connections {
        header_read_timeout: Duration::from_secs(args.header_read_timeout_secs),
        body_read_timeout: Duration::from_secs(args.body_read_timeout_secs),
        max_connections: args.max_connections,
        ..Connections::default()
    };
    match tls {
        Some(tls) => agentstate_server::serve_tls(listener, app(state), connections, tls, shutdown_signal()).await?,
        None => agentstate_server::serve(listener, app(state), connections, shutdown_signal()).await?,
    }
    sweeper.abort();
    tracing::info!("stopped");
    Ok(())
}

/// Loads each `FILE` or `APP=FILE` agent and serves it.
#[cfg(feature = "agents")]
fn serve_agents(mut state: AppState, specs: &[String]) -> anyhow::Result<AppState> {
    for spec in specs {
        let (app, path) = match spec.split_once('=') {
            Some((app, path)) => (Some(app.to_owned()), std::path::PathBuf::from(path)),
            None => (None, std::path::PathBuf::from(spec)),
        };
        let agent = agentstate_runtime::config::load_agent(&path)?;
        let app = app.unwrap_or_else(|| agent.name().to_owned());
        if state.serves(&app) {
            bail!(
                "two agents are served as app {app:?}: give one of them another name with --agent OTHER={}",
                path.display()
            );
        }
        tracing::info!(app = %app, agent = agent.name(), file = %path.display(), "serving agent");
        state = state.with_agent(app, agent);
    }
    Ok(state)
}

/// The embedding providers of `--embeddings`, their keys from the environment.
#[cfg(feature = "agents")]
fn embedders(specs: &[super::args::ProviderSpec]) -> anyhow::Result<agentstate::memory::Embedders> {
    use agentstate_runtime::providers::{GeminiEmbeddings, OpenAiEmbeddings};
    let env = |name: &str| std::env::var(name).ok();
    let mut embedders = agentstate::memory::Embedders::new();
    for spec in specs {
        let embedder: std::sync::Arc<dyn agentstate::memory::Embedder> = match spec.provider.as_str() {
            "gemini" => {
                let gemini = GeminiEmbeddings::from_lookup(&spec.model, env)?;
                std::sync::Arc::new(match &spec.base_url {
                    Some(url) => gemini.base_url(url),
                    None => gemini,
                })
            }
            _ => std::sync::Arc::new(match &spec.base_url {
                Some(url) => match env("OPENAI_API_KEY").filter(|k| !k.is_empty()) {
                    Some(key) => OpenAiEmbeddings::new(&spec.model, url).api_key(key),
                    None => OpenAiEmbeddings::new(&spec.model, url),
                },
                None => OpenAiEmbeddings::from_lookup(&spec.model, env)?,
            }),
        };
        let app = spec.app.as_deref().unwrap_or("every app");
        tracing::info!(app, provider = %spec.provider, model = %spec.model, "memory search by meaning");
        embedders = match &spec.app {
            Some(app) => embedders.app(app, embedder),
            None => embedders.every_app(embedder),
        };
    }
    Ok(embedders)
}

/// The models of `--memory-model`, their keys from the environment.
#[cfg(feature = "agents")]
fn fact_models(specs: &[super::args::ProviderSpec]) -> anyhow::Result<agentstate::memory::FactModels> {
    use agentstate_runtime::providers::{Gemini, OpenAiCompatible};
    let env = |name: &str| std::env::var(name).ok();
    let mut models = agentstate::memory::FactModels::new();
    for spec in specs {
        let model: std::sync::Arc<dyn agentstate_runtime::model::Model> = match spec.provider.as_str() {
            "gemini" => {
                let gemini = Gemini::from_lookup(&spec.model, env)?;
                std::sync::Arc::new(match &spec.base_url {
                    Some(url) => gemini.base_url(url),
                    None => gemini,
                })
            }
            _ => std::sync::Arc::new(match &spec.base_url {
                Some(url) => match env("OPENAI_API_KEY").filter(|k| !k.is_empty()) {
                    Some(key) => OpenAiCompatible::new(&spec.model, url).api_key(key),
                    None => OpenAiCompatible::new(&spec.model, url),
                },
                None => OpenAiCompatible::from_lookup(&spec.model, env)?,
            }),
        };
        let app = spec.app.as_deref().unwrap_or("every app");
        tracing::info!(app, provider = %spec.provider, model = %spec.model, "Memory Bank generation");
        let model = agentstate_server::memory_model::fact_model(model);
        models = match &spec.app {
            Some(app) => models.app(app, model),
            None => models.every_app(model),
        };
    }
    Ok(models)
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
