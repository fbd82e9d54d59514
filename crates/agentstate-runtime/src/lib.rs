//! The agent runtime on top of agentstate. So far: [`template`], instruction templates that read
//! session state (`{key}`, `{key?}`, `{user:key}`, literal `{{` / `}}`).

pub mod template;

pub use template::{Placeholder, Template, TemplateError};
