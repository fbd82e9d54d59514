//! Instruction templates: `{key}` is replaced by the session state's value.
//!
//! - `{key}` → the value: strings as they are, anything else as compact JSON; `null` → empty.
//!   A missing key is an error naming it and the agent.
//! - `{key?}` → the value, or empty when missing. Whitespace inside the braces is ignored.
//! - `{app:key}`, `{user:key}`, `{temp:key}` read those scopes.
//! - `{artifact.name}` → the text of an artifact (needs an artifact store).
//! - `{{` and `}}` → literal `{` and `}` (as the ADK state guide promises; ADK for Python substitutes
//!   `{{key}}` instead).
//! - Anything else in braces that is not a valid name (`{a b}`, `{"json": 1}`, `{bogus:key}`)
//!   is left as written, as are `${key}` and `\{key}`.
//!
//! A template is parsed once and lists its placeholders, so an agent can check them up front.
//!
//! ```
//! use agentstate::Map;
//! use agentstate_runtime::template::Template;
//! use serde_json::json;
//!
//! let template = Template::parse("Write about {topic} for {user:name?}. Use {{braces}} freely.");
//! let names: Vec<&str> = template.placeholders().map(|p| p.name.as_str()).collect();
//! assert_eq!(names, ["topic", "user:name"]);
//!
//! let mut state = Map::new();
//! state.insert("topic".into(), json!("friendship"));
//! assert_eq!(
//!     template.render(&state, "story_agent")?,
//!     "Write about friendship for . Use {braces} freely."
//! );
//! # Ok::<(), agentstate_runtime::template::TemplateError>(())
//! ```

use agentstate::{Map, Value};

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A required `{key}` is not in the state (the reference's message).
    #[error("Context variable not found: `{name}` in agent '{agent}'.")]
    MissingVariable {
        /// The key, with its prefix.
        name: String,
        /// The agent whose instruction it is.
        agent: String,
    },
    /// `{artifact.…}` without an artifact store (the reference's message).
    #[error("Artifact service is not initialized.")]
    NoArtifactService,
    /// A required `{artifact.name}` does not exist (the reference's message).
    #[error("Artifact '{name}' not found in agent '{agent}'.")]
    MissingArtifact {
        /// The artifact's name.
        name: String,
        /// The agent whose instruction it is.
        agent: String,
    },
}

/// The texts of the artifacts a template names, loaded before it is rendered: name → text, or
/// `None` for an artifact that does not exist.
pub type ArtifactTexts = std::collections::HashMap<String, Option<String>>;

/// One `{…}` to fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// The state key (with its scope prefix) or, for artifacts, the artifact name.
    pub name: String,
    /// `{name?}`: empty when missing instead of an error.
    pub optional: bool,
    /// `{artifact.name}`: an artifact rather than a state key.
    pub artifact: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Slot(Placeholder),
}

/// A parsed instruction template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    segments: Vec<Segment>,
}

/// Python's `str.isidentifier()`: the reference's rule for names, so the same templates work.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || unicode_ident::is_xid_start(c))
        && chars.all(unicode_ident::is_xid_continue)
}

fn is_state_name(name: &str) -> bool {
    match name.split(':').collect::<Vec<_>>().as_slice() {
        [id] => is_identifier(id),
        [prefix, id] => ["app", "user", "temp"].contains(prefix) && is_identifier(id),
        _ => false,
    }
}

/// What `{inner}` means, if it is a placeholder at all.
fn placeholder(inner: &str) -> Option<Placeholder> {
    let trimmed = inner.trim();
    let (name, optional) = match trimmed.strip_suffix('?') {
        Some(name) => (name, true),
        None => (trimmed, false),
    };
    if let Some(artifact) = name.strip_prefix("artifact.") {
        return (!artifact.is_empty()).then(|| Placeholder { name: artifact.to_owned(), optional, artifact: true });
    }
    is_state_name(name).then(|| Placeholder { name: name.to_owned(), optional, artifact: false })
}

impl Template {
    /// Parses `source`. Never fails: what is not a placeholder is text.
    pub fn parse(source: &str) -> Self {
        let chars: Vec<char> = source.chars().collect();
        let mut segments = Vec::new();
        let mut text = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match c {
                '{' | '}' if next == Some(c) => {
                    text.push(c);
                    i += 2;
                }
                '{' if i > 0 && matches!(chars[i - 1], '$' | '\\') => {
                    text.push(c);
                    i += 1;
                }
                '{' => {
                    let close = chars[i + 1..].iter().position(|&x| x == '{' || x == '}').map(|p| i + 1 + p);
                    match close.filter(|&j| chars[j] == '}') {
                        Some(j) => {
                            let inner: String = chars[i + 1..j].iter().collect();
                            match placeholder(&inner) {
                                Some(slot) => {
                                    if !text.is_empty() {
                                        segments.push(Segment::Text(std::mem::take(&mut text)));
                                    }
                                    segments.push(Segment::Slot(slot));
                                }
                                None => {
                                    text.push('{');
                                    text.push_str(&inner);
                                    text.push('}');
                                }
                            }
                            i = j + 1;
                        }
                        None => {
                            text.push(c);
                            i += 1;
                        }
                    }
                }
                _ => {
                    text.push(c);
                    i += 1;
                }
            }
        }
        if !text.is_empty() {
            segments.push(Segment::Text(text));
        }
        Self { segments }
    }

    /// The placeholders, in order of appearance.
    pub fn placeholders(&self) -> impl Iterator<Item = &Placeholder> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Slot(p) => Some(p),
            Segment::Text(_) => None,
        })
    }

    /// Fills the template from `state` (the live, merged state: `temp:` keys included) for the
    /// agent named `agent`.
    pub fn render(&self, state: &Map<String, Value>, agent: &str) -> Result<String, TemplateError> {
        self.render_with_artifacts(state, None, agent)
    }

    /// [`render`](Self::render), with the texts of the artifacts it names (`None`: there is no
    /// artifact service, and an `{artifact.…}` placeholder is an error).
    pub fn render_with_artifacts(
        &self,
        state: &Map<String, Value>,
        artifacts: Option<&ArtifactTexts>,
        agent: &str,
    ) -> Result<String, TemplateError> {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Slot(p) if p.artifact => {
                    let texts = artifacts.ok_or(TemplateError::NoArtifactService)?;
                    match texts.get(&p.name).and_then(Option::as_deref) {
                        Some(text) => out.push_str(text),
                        None if p.optional => {}
                        None => {
                            return Err(TemplateError::MissingArtifact {
                                name: p.name.clone(),
                                agent: agent.to_owned(),
                            });
                        }
                    }
                }
                Segment::Slot(p) => match state.get(&p.name) {
                    Some(Value::String(s)) => out.push_str(s),
                    Some(Value::Null) => {}
                    Some(other) => out.push_str(&other.to_string()),
                    None if p.optional => {}
                    None => {
                        return Err(TemplateError::MissingVariable { name: p.name.clone(), agent: agent.to_owned() });
                    }
                },
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> Map<String, Value> {
        match json!({"name": "Ann", "n": null, "num": 3, "b": true, "d": {"a": 1}, "lst": [1, "x"], "x": "X",
                     "app:color": "blue", "user:lang": "fr", "temp:t": "T", "café": "C", "class": "K",
                     "s": "has {name} inside"})
        {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn render(template: &str) -> Result<String, TemplateError> {
        Template::parse(template).render(&state(), "ag")
    }

    /// Edge cases as ADK for Python 2.13 renders them, with agentstate's output. Rows marked
    /// "differs" differ from the reference on purpose.
    #[test]
    fn the_reference_edge_case_table() {
        let rows: &[(&str, &str)] = &[
            ("Hi {name}!", "Hi Ann!"),
            ("{ name }", "Ann"),
            ("{name?}", "Ann"),
            ("{missing?}", ""),
            ("[{n}]", "[]"),
            ("{num} {b} {d} {lst}", r#"3 true {"a":1} [1,"x"]"#), // differs: JSON, not Python's str()
            ("{app:color} {user:lang} {temp:t}", "blue fr T"),
            ("{bogus:key}", "{bogus:key}"),
            ("{app:missing?}", ""),
            ("{with space}", "{with space}"),
            ("{1abc}", "{1abc}"),
            ("{a-b}", "{a-b}"),
            ("{name!r}", "{name!r}"),
            ("{x.y}", "{x.y}"),
            ("{app:}", "{app:}"),
            ("{:x}", "{:x}"),
            ("{user:a:b}", "{user:a:b}"),
            ("{}", "{}"),
            ("{ }", "{ }"),
            ("{?}", "{?}"),
            ("{name??}", "{name??}"),
            ("{?name}", "{?name}"),
            ("{ARTIFACT.x}", "{ARTIFACT.x}"),
            ("{{name}}", "{name}"),         // differs: literal braces (reference: "Ann")
            ("{{{name}}}", "{Ann}"),        // differs (reference: "Ann")
            ("{{name}", "{name}"),          // differs (reference: "Ann")
            ("{name}}", "Ann}"),            // differs (reference: "Ann")
            ("{{ name }}", "{ name }"),     // differs (reference: "Ann")
            ("{{x}} and {x}", "{x} and X"), // differs (reference: "X and X")
            ("${name}", "${name}"),
            ("\\{name}", "\\{name}"),
            ("{name?}?", "Ann?"),
            (r#"json: {"k": 1}"#, r#"json: {"k": 1}"#),
            ("{a{b}c}", "{atruec}"), // the inner {b} is the placeholder, as in the reference
            ("{café}", "C"),
            ("{class}", "K"),
            ("{\nname\n}", "Ann"),
            ("{s}", "has {name} inside"),
            ("{{", "{"), // differs (reference: "{{")
            ("}}", "}"), // differs (reference: "}}")
            ("{name}{", "Ann{"),
        ];
        for (template, expected) in rows {
            assert_eq!(render(template).as_deref(), Ok(*expected), "template {template:?}");
        }
    }

    #[test]
    fn missing_required_keys_name_the_key_and_agent() {
        for (template, name) in [("{missing}", "missing"), ("{user:nope}", "user:nope")] {
            let err = render(template).unwrap_err();
            assert_eq!(err.to_string(), format!("Context variable not found: `{name}` in agent 'ag'."));
        }
        assert_eq!(render("{artifact.notes.txt?}"), Err(TemplateError::NoArtifactService));
    }

    #[test]
    fn placeholders_are_listed_once_parsed() {
        let t = Template::parse("{a} {{b}} {user:c?} {artifact.f.txt} {not valid}");
        let found: Vec<(String, bool, bool)> =
            t.placeholders().map(|p| (p.name.clone(), p.optional, p.artifact)).collect();
        assert_eq!(found, [("a".into(), false, false), ("user:c".into(), true, false), ("f.txt".into(), false, true)]);
    }
}
