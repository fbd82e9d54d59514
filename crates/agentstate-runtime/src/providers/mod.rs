//! Model providers over HTTP: [`Gemini`] (the Gemini API) and [`OpenAiCompatible`] (OpenAI chat
//! completions, and every server speaking it: Ollama, vLLM, llama.cpp server, LM Studio, …).
//!
//! For memory's search by meaning, [`OpenAiEmbeddings`] and [`GeminiEmbeddings`] embed texts
//! through the same two APIs.
//!
//! Both take their base URL and API key from the environment by default ([`Gemini::from_env`],
//! [`OpenAiCompatible::from_env`]) or explicitly, stream with server-sent events when the run
//! streams, and map function calling both ways.

mod embeddings;
mod gemini;
mod openai;

use std::time::Duration;

use futures_util::StreamExt;

pub use embeddings::{GeminiEmbeddings, OpenAiEmbeddings};
pub use gemini::{GEMINI_DEFAULT_BASE_URL, Gemini};
pub use openai::{OPENAI_DEFAULT_BASE_URL, OpenAiCompatible};

use crate::model::{LlmResponse, Model, ModelError, ResponseStream};

into_dyn!(Model: Gemini, OpenAiCompatible);

/// How long connecting to a provider may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a provider may stay silent: before its answer starts, or between two streamed chunks.
const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// The HTTP client every provider shares (one connection pool per process).
fn client(provider: &'static str) -> Result<reqwest::Client, ModelError> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .build()
        .map_err(|e| ModelError::Config(format!("{provider}: cannot build an HTTP client: {e}")))?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

fn transport(provider: &'static str, error: &reqwest::Error) -> ModelError {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    ModelError::Transport { provider, message }
}

/// Sends `request`; a non-success status becomes [`ModelError::Status`] with the body.
///
/// Rate limits (429), overload (500, 502, 503, 504) and failed connections are retried up to
/// `retries` times, after the delay the provider asks for (`Retry-After`, at most 30 s) or a
/// growing one. Nothing has been answered yet at that point, so a retry repeats nothing.
async fn send(
    provider: &'static str,
    request: reqwest::RequestBuilder,
    retries: u32,
) -> Result<reqwest::Response, ModelError> {
    let mut attempt = 0;
    loop {
        let this_try =
            request.try_clone().ok_or_else(|| ModelError::Config(format!("{provider}: request not repeatable")))?;
        let retryable = match this_try.send().await {
            Ok(response) if response.status().is_success() => return Ok(response),
            Ok(response) if attempt < retries && is_transient(response.status()) => retry_after(&response),
            Ok(response) => return Err(status_error(provider, response).await),
            Err(e) if attempt < retries && (e.is_connect() || e.is_timeout()) => None,
            Err(e) => return Err(transport(provider, &e)),
        };
        attempt += 1;
        let delay = retryable.unwrap_or_else(|| Duration::from_millis(250 * 2u64.pow(attempt.min(6))));
        tracing::warn!(provider, attempt, delay_ms = delay.as_millis() as u64, "model call failed; retrying");
        tokio::time::sleep(delay).await;
    }
}

fn is_transient(status: reqwest::StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 500 | 502 | 503 | 504)
}

/// The delay a `Retry-After: <seconds>` header asks for, capped at 30 s.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: f64 = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs_f64(seconds.clamp(0.0, 30.0)))
}

async fn status_error(provider: &'static str, response: reqwest::Response) -> ModelError {
    let status = response.status();
    let mut body = response.text().await.unwrap_or_default();
    if body.len() > 2048 {
        let mut cut = 2048;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        body.truncate(cut);
        body.push('…');
    }
    ModelError::Status { provider, status: status.as_u16(), body }
}

/// How often a provider retries a transient failure unless told otherwise.
pub const DEFAULT_RETRIES: u32 = 2;

/// The `data` of each server-sent event of `response`, parsed as JSON; OpenAI's `[DONE]` ends it.
fn sse_json(
    provider: &'static str,
    response: reqwest::Response,
) -> impl futures_core::Stream<Item = Result<serde_json::Value, ModelError>> + Send {
    use eventsource_stream::Eventsource;
    response
        .bytes_stream()
        .eventsource()
        .take_while(|event| std::future::ready(!matches!(event, Ok(e) if e.data.trim() == "[DONE]")))
        .filter_map(move |event| {
            std::future::ready(match event {
                Err(e) => Some(Err(ModelError::Transport { provider, message: e.to_string() })),
                Ok(e) if e.data.trim().is_empty() => None,
                Ok(e) => Some(match serde_json::from_str::<serde_json::Value>(&e.data) {
                    // Both APIs report a failure after the stream began as an `error` object.
                    Ok(chunk) if chunk.get("error").is_some_and(|e| !e.is_null()) => {
                        let error = &chunk["error"];
                        let message = error
                            .get("message")
                            .and_then(|m| m.as_str())
                            .map_or_else(|| error.to_string(), str::to_owned);
                        Err(ModelError::Transport { provider, message: format!("the stream failed: {message}") })
                    }
                    Ok(chunk) => Ok(chunk),
                    Err(err) => Err(ModelError::Decode { provider, message: format!("{err} in event {}", e.data) }),
                }),
            })
        })
}

/// Sums streamed chunks up into partial responses and the complete one.
trait Aggregator: Send + 'static {
    /// Takes a chunk; returns the partial response to show for it, if any.
    fn add(&mut self, chunk: serde_json::Value) -> Result<Option<LlmResponse>, ModelError>;
    /// The complete response.
    fn finish(self) -> Result<LlmResponse, ModelError>;
}

/// The partials of `chunks` as they come, then the complete response; stops at the first error.
fn streamed<A: Aggregator>(
    chunks: impl futures_core::Stream<Item = Result<serde_json::Value, ModelError>> + Send + 'static,
    aggregator: A,
) -> ResponseStream {
    let state = Some((Box::pin(chunks), aggregator));
    Box::pin(futures_util::stream::unfold(state, |state| async move {
        let (mut chunks, mut aggregator) = state?;
        loop {
            let step = match chunks.next().await {
                None => return Some((aggregator.finish(), None)),
                Some(chunk) => chunk.and_then(|c| aggregator.add(c)),
            };
            match step {
                Err(e) => return Some((Err(e), None)),
                Ok(Some(partial)) => return Some((Ok(partial), Some((chunks, aggregator)))),
                Ok(None) => {}
            }
        }
    }))
}

fn decode(provider: &'static str, message: impl std::fmt::Display) -> ModelError {
    ModelError::Decode { provider, message: message.to_string() }
}

fn trim_slash(url: &str) -> String {
    url.trim_end_matches('/').to_owned()
}
