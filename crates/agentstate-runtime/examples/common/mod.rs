//! Shared by the examples: which model to use.
//!
//! By default a scripted model plays the answers, so the examples run offline and print the
//! same thing every time. Set `AGENTSTATE_EXAMPLE_MODEL` to use a real one:
//! `gemini:gemini-2.5-flash` (needs `GEMINI_API_KEY`) or `openai:llama3.2` (with
//! `OPENAI_BASE_URL=http://localhost:11434/v1` for a local Ollama, or `OPENAI_API_KEY`).

use std::sync::Arc;

use agentstate_runtime::model::{LlmResponse, Model};
use agentstate_runtime::providers::{Gemini, OpenAiCompatible};
use agentstate_runtime::testing::ScriptedModel;

/// The real model named by `AGENTSTATE_EXAMPLE_MODEL`, or a script of `replies`.
#[allow(dead_code, reason = "not every example uses both helpers")]
pub(crate) fn model(replies: Vec<LlmResponse>) -> anyhow::Result<Arc<dyn Model>> {
    scripted_or_real(replies.into_iter().fold(ScriptedModel::new("scripted"), ScriptedModel::reply))
}

/// The real model named by `AGENTSTATE_EXAMPLE_MODEL`, or `script` (keep a clone to see what it
/// was sent).
pub(crate) fn scripted_or_real(script: ScriptedModel) -> anyhow::Result<Arc<dyn Model>> {
    Ok(match std::env::var("AGENTSTATE_EXAMPLE_MODEL") {
        Ok(spec) => match spec.split_once(':') {
            Some(("gemini", name)) => Arc::new(Gemini::from_env(name)?),
            Some(("openai", name)) => Arc::new(OpenAiCompatible::from_env(name)?),
            _ => anyhow::bail!("AGENTSTATE_EXAMPLE_MODEL is gemini:<model> or openai:<model>, not {spec:?}"),
        },
        Err(_) => Arc::new(script),
    })
}
