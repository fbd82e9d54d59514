//! Agents declared in YAML (what `agentstate serve --agent FILE` loads).
//!
//! ```yaml
//! name: assistant                 # an identifier; the author of its events
//! description: Answers questions. # optional
//! model: gemini-2.5-flash         # the provider's model name
//! provider: gemini                # gemini (default) | openai (any OpenAI-compatible server)
//! base_url: http://localhost:11434/v1  # optional; else GEMINI_BASE_URL / OPENAI_BASE_URL
//! api_key_env: MY_KEY             # optional; else GEMINI_API_KEY / OPENAI_API_KEY
//! instruction: |
//!   You help {user:name?} with {topic}.
//! output_key: last_answer         # optional
//! output_schema:                  # optional: the answer is JSON of this schema
//!   type: object
//!   properties: {answer: {type: string}}
//! temperature: 0.2                # optional
//! max_output_tokens: 1024         # optional
//! include_contents: default       # default | none
//! tools:                          # optional: built-in tools, as ADK names them
//!   - name: load_memory           # search the user's memories when the model asks
//!   - name: preload_memory        # the memories matching each turn, in the instruction
//! sub_agents:                     # optional: agents it can transfer to
//!   - config_path: billing.yaml   # a file, relative to this one…
//!   - name: helper                # …or inline
//!     model: gemini-2.5-flash
//!     instruction: Help.
//! ```
//!
//! `agent_class: SequentialAgent` or `ParallelAgent` (with `sub_agents`, no model) composes
//! agents instead; the default is `LlmAgent`. Unknown fields are refused, so a typo is an error
//! rather than silently ignored.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::agent::{Agent, BuildError, validate_agent_name};
use crate::llm_agent::LlmAgent;
use crate::model::{Model, ModelError};
use crate::providers::{Gemini, OpenAiCompatible};
use crate::workflow::{ParallelAgent, SequentialAgent};

/// Why an agent file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read agent file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid YAML of the expected shape.
    #[error("agent file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line and column.
        message: String,
    },
    /// The declaration is incomplete or contradictory.
    #[error("agent file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The model cannot be set up (no API key, …).
    #[error("agent file {path}: {source}")]
    Model {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: ModelError,
    },
    /// The agent is not valid (its name, duplicate sub-agents, …).
    #[error("agent file {path}: {source}")]
    Build {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: BuildError,
    },
}

/// Which kind of agent a file declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum AgentClass {
    /// A model-backed agent.
    #[default]
    LlmAgent,
    /// Sub-agents one after another.
    SequentialAgent,
    /// Sub-agents side by side.
    ParallelAgent,
}

/// Which API the model is behind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// The Gemini API.
    #[default]
    Gemini,
    /// OpenAI chat completions or a compatible server.
    #[serde(alias = "openai-compatible", alias = "ollama", alias = "vllm")]
    Openai,
}

/// `include_contents`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IncludeContents {
    /// The conversation history.
    #[default]
    Default,
    /// Only this turn.
    None,
}

/// One agent as declared.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Kind of agent.
    #[serde(default)]
    pub agent_class: AgentClass,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The model name (LlmAgent).
    pub model: Option<String>,
    /// The API.
    #[serde(default)]
    pub provider: Provider,
    /// The API's base URL.
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// The instruction template.
    pub instruction: Option<String>,
    /// `output_key`.
    pub output_key: Option<String>,
    /// A JSON schema the final answer follows (saved under `output_key` as parsed JSON).
    pub output_schema: Option<serde_json::Value>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Cap on generated tokens.
    pub max_output_tokens: Option<u32>,
    /// History or only this turn.
    #[serde(default)]
    pub include_contents: IncludeContents,
    /// Sub-agents, inline or by file.
    #[serde(default)]
    pub sub_agents: Vec<SubAgentConfig>,
    /// Built-in tools by name (LlmAgent).
    #[serde(default)]
    pub tools: Vec<ToolConfig>,
}

/// A built-in tool, as ADK's agent files name it (`google.adk.tools.` in front is accepted).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// `load_memory` or `preload_memory`.
    pub name: String,
}

/// The built-in tools an agent file can name.
const BUILT_IN_TOOLS: [&str; 2] = ["load_memory", "preload_memory"];

/// A sub-agent: a file (`config_path`) or an inline declaration.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SubAgentConfig {
    /// `config_path: other.yaml`, relative to the declaring file.
    File {
        /// The path.
        config_path: PathBuf,
    },
    /// Declared in place.
    Inline(Box<AgentConfig>),
}

/// Loads the agent declared in `path`, reading API keys and base URLs from the environment.
pub fn load_agent(path: &Path) -> Result<Arc<dyn Agent>, ConfigError> {
    load_agent_with(path, &|name| std::env::var(name).ok())
}

/// [`load_agent`] reading environment variables through `lookup`.
pub fn load_agent_with(path: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Arc<dyn Agent>, ConfigError> {
    Loader { lookup, stack: Vec::new() }.file(path)
}

struct Loader<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// Files being loaded, to refuse cycles.
    stack: Vec<PathBuf>,
}

impl Loader<'_> {
    fn file(&mut self, path: &Path) -> Result<Arc<dyn Agent>, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.into(), source })?;
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if self.stack.contains(&canonical) {
            return Err(ConfigError::Invalid {
                path: path.into(),
                message: "sub_agents refer back to this file (a cycle)".into(),
            });
        }
        let config: AgentConfig = serde_yaml_ng::from_str(&text)
            .map_err(|e| ConfigError::Parse { path: path.into(), message: e.to_string() })?;
        self.stack.push(canonical);
        let agent = self.agent(&config, path);
        self.stack.pop();
        agent
    }

    fn agent(&mut self, config: &AgentConfig, path: &Path) -> Result<Arc<dyn Agent>, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid { path: path.into(), message };
        let build = |source| ConfigError::Build { path: path.into(), source };
        if config.name.is_empty() {
            return Err(invalid("`name` is required".into()));
        }
        validate_agent_name(&config.name).map_err(build)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut sub_agents = Vec::new();
        for sub in &config.sub_agents {
            sub_agents.push(match sub {
                SubAgentConfig::File { config_path } => match self.file(&dir.join(config_path)) {
                    Err(ConfigError::Io { path: missing, source }) => {
                        return Err(invalid(format!("cannot read sub-agent file {}: {source}", missing.display())));
                    }
                    other => other?,
                },
                SubAgentConfig::Inline(inline) => self.agent(inline, path)?,
            });
        }
        if config.agent_class != AgentClass::LlmAgent {
            let llm_only = [
                ("model", config.model.is_some()),
                ("instruction", config.instruction.is_some()),
                ("output_key", config.output_key.is_some()),
                ("output_schema", config.output_schema.is_some()),
                ("base_url", config.base_url.is_some()),
                ("tools", !config.tools.is_empty()),
            ];
            if let Some((field, _)) = llm_only.iter().find(|(_, set)| *set) {
                return Err(invalid(format!(
                    "`{field}` is for LlmAgent, not {:?} '{}'",
                    config.agent_class, config.name
                )));
            }
            if sub_agents.is_empty() {
                return Err(invalid(format!("{:?} '{}' needs sub_agents", config.agent_class, config.name)));
            }
        }
        let agent: Arc<dyn Agent> = match config.agent_class {
            AgentClass::SequentialAgent => Arc::new(
                SequentialAgent::new(&config.name, sub_agents).map_err(build)?.description(&config.description),
            ),
            AgentClass::ParallelAgent => {
                Arc::new(ParallelAgent::new(&config.name, sub_agents).map_err(build)?.description(&config.description))
            }
            AgentClass::LlmAgent => {
                let Some(name) = &config.model else {
                    return Err(invalid(format!("LlmAgent '{}' needs `model`", config.name)));
                };
                let model =
                    self.model(config, name).map_err(|source| ConfigError::Model { path: path.into(), source })?;
                let mut builder = LlmAgent::builder(&config.name, model).description(&config.description);
                if let Some(instruction) = &config.instruction {
                    builder = builder.instruction(instruction);
                }
                if let Some(key) = &config.output_key {
                    builder = builder.output_key(key);
                }
                if let Some(schema) = &config.output_schema {
                    builder = builder.output_schema(schema.clone());
                }
                if let Some(t) = config.temperature {
                    builder = builder.temperature(t);
                }
                if let Some(n) = config.max_output_tokens {
                    builder = builder.max_output_tokens(n);
                }
                builder = builder.include_contents(config.include_contents == IncludeContents::Default);
                for tool in &config.tools {
                    let name = tool.name.strip_prefix("google.adk.tools.").unwrap_or(&tool.name);
                    builder = builder.tool(match name {
                        "load_memory" => crate::memory_tools::load_memory(),
                        "preload_memory" => crate::memory_tools::preload_memory(),
                        other => {
                            return Err(invalid(format!(
                                "no built-in tool is called {other:?}; the built-in tools are {}",
                                BUILT_IN_TOOLS.join(", ")
                            )));
                        }
                    });
                }
                for sub in sub_agents {
                    builder = builder.sub_agent(sub);
                }
                Arc::new(builder.build().map_err(build)?)
            }
        };
        Ok(agent)
    }

    fn model(&self, config: &AgentConfig, name: &str) -> Result<Arc<dyn Model>, ModelError> {
        let lookup = |var: &str| -> Option<String> {
            let var = match (var, &config.api_key_env) {
                ("GEMINI_API_KEY" | "OPENAI_API_KEY", Some(custom)) => custom.as_str(),
                ("GOOGLE_API_KEY", Some(_)) => return None,
                ("GEMINI_BASE_URL" | "OPENAI_BASE_URL", _) if config.base_url.is_some() => {
                    return config.base_url.clone();
                }
                _ => var,
            };
            (self.lookup)(var)
        };
        Ok(match config.provider {
            Provider::Gemini => Arc::new(Gemini::from_lookup(name, lookup)?),
            Provider::Openai => Arc::new(OpenAiCompatible::from_lookup(name, lookup)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agentstate-config-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_pipeline_of_files_and_inline_agents_loads() {
        let dir = tempdir("pipeline");
        write(
            &dir,
            "writer.yaml",
            "name: writer\nmodel: llama3.2\nprovider: openai\nbase_url: http://127.0.0.1:9/v1\ninstruction: Write about {topic}.\noutput_key: temp:draft\n",
        );
        let root = write(
            &dir,
            "root.yaml",
            "agent_class: SequentialAgent\nname: pipeline\nsub_agents:\n  - config_path: writer.yaml\n  - name: reader\n    model: m\n    provider: openai\n    base_url: http://127.0.0.1:9/v1\n    instruction: 'Draft: {temp:draft}'\n",
        );
        let agent = load_agent_with(&root, &no_env).unwrap();
        let names: Vec<&str> = agent.sub_agents().iter().map(|a| a.name()).collect();
        assert_eq!((agent.name(), names), ("pipeline", vec!["writer", "reader"]));
    }

    #[test]
    fn mistakes_are_named() {
        let dir = tempdir("mistakes");
        let cases = [
            ("typo.yaml", "name: a\nmodel: m\ninstructions: hi\n", "unknown field `instructions`"),
            ("noname.yaml", "model: m\n", "`name` is required"),
            ("nomodel.yaml", "name: a\n", "needs `model`"),
            ("badname.yaml", "name: my-agent\nmodel: m\n", "invalid agent name"),
            ("nokey.yaml", "name: a\nmodel: gemini-2.5-flash\n", "GEMINI_API_KEY"),
            ("seqmodel.yaml", "agent_class: SequentialAgent\nname: s\nmodel: m\n", "`model` is for LlmAgent"),
            (
                "cycle.yaml",
                "agent_class: SequentialAgent\nname: s\nsub_agents:\n  - config_path: cycle.yaml\n",
                "cycle",
            ),
            (
                "missing.yaml",
                "agent_class: ParallelAgent\nname: p\nsub_agents:\n  - config_path: nope.yaml\n",
                "nope.yaml",
            ),
        ];
        for (file, text, expected) in cases {
            let path = write(&dir, file, text);
            let err = load_agent_with(&path, &no_env).err().unwrap().to_string();
            assert!(err.contains(expected), "{file}: {err}");
            assert!(err.contains(file), "{file}: the message names the file: {err}");
        }
    }

    #[test]
    fn the_key_comes_from_the_named_variable() {
        let dir = tempdir("key");
        let path = write(&dir, "a.yaml", "name: a\nmodel: gemini-2.5-flash\napi_key_env: MY_KEY\n");
        let env = |name: &str| (name == "MY_KEY").then(|| "k".to_owned());
        assert!(load_agent_with(&path, &env).is_ok());
        let wrong = |name: &str| (name == "GEMINI_API_KEY").then(|| "k".to_owned());
        assert!(load_agent_with(&path, &wrong).is_err());
    }
}
