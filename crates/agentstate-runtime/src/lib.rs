//! The agent runtime on top of agentstate. So far: [`template`], instruction templates that read
//! session state (`{key}`, `{key?}`, `{user:key}`, literal `{{` / `}}`), and [`context`], the
//! callback and tool contexts whose state writes become the next event's `state_delta`.

pub mod context;
pub mod template;

pub use context::{CallbackContext, StateMut, ToolContext, merge_deltas};
pub use template::{Placeholder, Template, TemplateError};
