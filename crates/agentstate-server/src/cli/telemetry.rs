//! Logs on standard error (filtered by `RUST_LOG`) and, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, OpenTelemetry traces exported over OTLP —
//! `http/protobuf` to `<endpoint>/v1/traces` unless `OTEL_EXPORTER_OTLP_PROTOCOL` says `grpc` —
//! in batches from a thread of their own, so a slow or unreachable collector never holds a
//! request. The SDK reads the other standard variables
//! (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER` — parent-based always-on by default —,
//! `OTEL_BSP_*`); incoming W3C `traceparent` headers continue the caller's trace. What is exported
//! does not depend on `RUST_LOG`: agentstate's spans at debug and above, always.

use anyhow::{Context, bail};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Keeps the exporter; dropping it flushes what is left (at shutdown).
pub(crate) struct Telemetry(Option<SdkTracerProvider>);

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("flushing traces at shutdown: {e}");
        }
    }
}

fn set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Installs the logger, and the exporter when the variables ask for one.
pub(crate) fn init() -> anyhow::Result<Telemetry> {
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,agentstate=info".into()));
    if !set("OTEL_EXPORTER_OTLP_ENDPOINT") && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        tracing_subscriber::registry().with(logs).init();
        return Ok(Telemetry(None));
    }
    // The signal's own variable first, as the SDKs read them; OTLP/HTTP when neither says.
    let protocol = ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]
        .into_iter()
        .find_map(|variable| Some((variable, std::env::var(variable).ok().filter(|p| !p.is_empty())?)));
    let exporter = match protocol.as_ref().map(|(variable, protocol)| (*variable, protocol.as_str())) {
        None | Some((_, "http/protobuf")) => opentelemetry_otlp::SpanExporter::builder().with_http().build(),
        // The channel is made here, on the server's runtime, which then carries its calls.
        Some((_, "grpc")) => opentelemetry_otlp::SpanExporter::builder().with_tonic().build(),
        Some((variable, protocol)) => {
            bail!("{variable}={protocol:?}: agentstate exports traces as \"http/protobuf\" or \"grpc\"")
        }
    }
    .context("the OTLP exporter (OTEL_EXPORTER_OTLP_ENDPOINT)")?;
    // The SDK reads the service name from the environment; ours where it gives none.
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !set("OTEL_SERVICE_NAME")
        && !std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="))
    {
        resource = resource.with_service_name("agentstate");
    }
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    // A target matches by prefix: `agentstate` covers every agentstate_* crate.
    let exported =
        Targets::new().with_target("agentstate", LevelFilter::DEBUG).with_target("tower_http", LevelFilter::INFO);
    let traces = tracing_opentelemetry::layer().with_tracer(provider.tracer("agentstate")).with_filter(exported);
    tracing_subscriber::registry().with(logs).with(traces).init();
    Ok(Telemetry(Some(provider)))
}
