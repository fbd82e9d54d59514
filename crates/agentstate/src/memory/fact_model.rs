//! The model Memory Bank's generation asks ([`super::generate`]): one per app, as the operator
//! configures it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;

/// A model that answers Memory Bank's two calls: an instruction and an input in, text out.
#[async_trait]
pub trait FactModel: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &str;

    /// The model's text answer to `instruction` (the system instruction) and `input` (the user's
    /// turn).
    async fn answer(&self, instruction: &str, input: &str) -> Result<String>;
}

/// The fact models of the apps: one for every app, or per app (an app's own wins).
#[derive(Clone, Default)]
pub struct FactModels {
    every: Option<Arc<dyn FactModel>>,
    apps: HashMap<String, Arc<dyn FactModel>>,
}

impl fmt::Debug for FactModels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<(&str, &str)> = self.apps.iter().map(|(app, m)| (app.as_str(), m.name())).collect();
        f.debug_struct("FactModels")
            .field("every", &self.every.as_ref().map(|m| m.name()))
            .field("apps", &names)
            .finish()
    }
}

impl FactModels {
    /// No model: generation from conversations is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// `model` for every app without one of its own.
    pub fn every_app(mut self, model: Arc<dyn FactModel>) -> Self {
        self.every = Some(model);
        self
    }

    /// `model` for `app`.
    pub fn app(mut self, app: impl Into<String>, model: Arc<dyn FactModel>) -> Self {
        self.apps.insert(app.into(), model);
        self
    }

    /// The model of `app`, if any.
    pub fn of(&self, app: &str) -> Option<&Arc<dyn FactModel>> {
        self.apps.get(app).or(self.every.as_ref())
    }
}
