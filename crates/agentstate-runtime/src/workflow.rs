//! Agents that run other agents: [`SequentialAgent`] (one after another) and [`ParallelAgent`]
//! (all at once, each on its own branch).
//!
//! Both share the invocation with their children: one invocation id and one session handle, so
//! a `temp:` key one child writes is there for the next (and gone in the next invocation).

use std::sync::Arc;

use async_trait::async_trait;

use crate::agent::{Agent, BuildError, InvocationContext, check_sub_agent_names};
use crate::error::RuntimeError;

/// A workflow agent: a name, a description, sub-agents, and how it runs them.
macro_rules! workflow_agent {
    ($(#[$doc:meta])* $agent:ident, |$this:ident, $ctx:ident| $run:expr) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $agent {
            name: String,
            description: String,
            sub_agents: Vec<Arc<dyn Agent>>,
        }

        impl std::fmt::Debug for $agent {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let names: Vec<&str> = self.sub_agents.iter().map(|a| a.name()).collect();
                f.debug_struct(stringify!($agent)).field("name", &self.name).field("sub_agents", &names).finish()
            }
        }

        impl $agent {
            #[doc = concat!("A ", stringify!($agent), " called `name` running `sub_agents`.")]
            pub fn new(name: impl Into<String>, sub_agents: Vec<Arc<dyn Agent>>) -> Result<Self, BuildError> {
                let name = name.into();
                check_sub_agent_names(&name, &sub_agents)?;
                Ok(Self { name, description: String::new(), sub_agents })
            }

            /// Sets what it does.
            pub fn description(mut self, description: impl Into<String>) -> Self {
                self.description = description.into();
                self
            }
        }

        #[async_trait]
        impl Agent for $agent {
                agent_fields!();

            async fn run(&self, ctx: &InvocationContext) -> Result<(), RuntimeError> {
                let ($this, $ctx) = (self, ctx);
                $run
            }
        }
    };
}

workflow_agent!(
    /// Runs its sub-agents in order; each sees what the previous ones wrote.
    SequentialAgent,
    |this, ctx| {
        for agent in &this.sub_agents {
            crate::telemetry::invoke(&**agent, ctx).await?;
        }
        Ok(())
    }
);

workflow_agent!(
    /// Runs its sub-agents concurrently, each on its own branch (`parallel.child`), so they do
    /// not see each other's conversation. Their events are appended as they come, one at a time,
    /// to the same session: every state write of every child is kept. Every child runs to its
    /// end; the first failure (in child order) is reported.
    ParallelAgent,
    |this, ctx| {
        let runs = this.sub_agents.iter().map(|agent| {
            let ctx = ctx.child_branch(&this.name, agent.name());
            async move { crate::telemetry::invoke(&**agent, &ctx).await }
        });
        futures_util::future::join_all(runs).await.into_iter().collect()
    }
);

into_dyn!(Agent: SequentialAgent, ParallelAgent);
