//! Memory Bank's fact model over any of the runtime's model providers (`--memory-model`): each
//! call is one request without tools, the instruction as its system instruction and the input
//! as the user's turn, asking for JSON; the answer is the response's text.

use std::sync::Arc;

use agentstate::memory::FactModel;
use agentstate_runtime::model::{LlmRequest, Model, ModelError};
use async_trait::async_trait;
use futures_util::StreamExt;

/// `model` as Memory Bank's fact model.
pub fn fact_model(model: Arc<dyn Model>) -> Arc<dyn FactModel> {
    Arc::new(RuntimeFactModel(model))
}

struct RuntimeFactModel(Arc<dyn Model>);

#[async_trait]
impl FactModel for RuntimeFactModel {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn answer(&self, instruction: &str, input: &str) -> agentstate::Result<String> {
        let failed = |e: ModelError| {
            // Worth a retry: no answer, a rate limit or a server error.
            let retryable = matches!(e, ModelError::Transport { .. })
                || matches!(e, ModelError::Status { status, .. } if status == 429 || status >= 500);
            agentstate::Error::backend(format!("the memory model {} failed", self.0.name()), retryable, e)
        };
        let request = LlmRequest {
            model: self.0.name().to_owned(),
            system_instruction: Some(instruction.to_owned()),
            contents: vec![agentstate::Content::text("user", input)],
            tools: Vec::new(),
            temperature: Some(0.0),
            max_output_tokens: None,
            response_schema: None,
        };
        let mut responses = self.0.generate(request, false).await.map_err(failed)?;
        let mut text = String::new();
        while let Some(response) = responses.next().await {
            let response = response.map_err(failed)?;
            if response.partial {
                continue;
            }
            if let Some(content) = response.content {
                text.push_str(&agentstate::memory::text_of(&content));
            }
        }
        Ok(text)
    }
}
