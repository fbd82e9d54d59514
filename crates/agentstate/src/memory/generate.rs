//! Memory Bank's generation: facts extracted from a conversation by a model the operator
//! chooses ([`FactModel`](super::FactModel)), then consolidated with the scope's memories by a second call.
//!
//! The contract, both calls JSON only (a code fence around it is tolerated):
//! - **Extraction.** The model gets [`EXTRACTION_INSTRUCTION`] (the topics filled in) and the
//!   conversation (`user: …` / `model: …` lines) and answers `{"facts": ["…", …]}`: each fact one
//!   short standalone sentence.
//! - **Consolidation**, when the scope holds memories near the new facts (the 3 nearest of each,
//!   at most 20): it gets [`CONSOLIDATION_INSTRUCTION`] and `{"existing": [{"id", "fact"}, …],
//!   "new": ["…", …]}` and answers `{"actions": [{"action": "CREATED", "fact"} | {"action":
//!   "UPDATED", "id", "fact"} | {"action": "DELETED", "id"}, …]}`, naming only ids it was given.
//!
//! Facts given directly (Memory Bank's direct memories) go through consolidation alone
//! ([`MemoryService::bank_consolidate`]); `disable_consolidation` creates every fact as it is.
//!
//! An answer that is not that JSON fails the generation with a clear error and writes nothing:
//! every answer is checked before the first write.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::bank::{BankMemory, MAX_FACT_BYTES, RevisionOptions, Scope};
use super::fact_model::FactModels;
use super::service::MemoryService;
use super::words::words;
use crate::error::{Error, Result};

/// One turn of a conversation to extract from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// `user` or `model`.
    pub role: String,
    /// What was said.
    pub text: String,
}

/// What a generation did to a memory, as Memory Bank names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A new memory.
    Created,
    /// A memory whose fact changed.
    Updated,
    /// A memory removed.
    Deleted,
}

impl Action {
    /// Memory Bank's name of it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "CREATED",
            Self::Updated => "UPDATED",
            Self::Deleted => "DELETED",
        }
    }
}

/// A memory a generation wrote, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The memory (as it was, for a deletion).
    pub memory: BankMemory,
    /// What was done.
    pub action: Action,
    /// For an update, the id of the revision it replaced (a rollback to it undoes the update).
    pub previous_revision: Option<String>,
}

/// Memory Bank's managed topics, by their API names, with what each asks the model to keep.
pub const MANAGED_TOPICS: [(&str, &str); 4] = [
    (
        "USER_PERSONAL_INFO",
        "personal information about the user: names, relationships, places, dates that matter to them",
    ),
    ("USER_PREFERENCES", "the user's preferences: likes, dislikes, preferred styles and ways of doing things"),
    ("KEY_CONVERSATION_DETAILS", "key events, milestones and decisions of the conversation"),
    ("EXPLICIT_INSTRUCTIONS", "what the user explicitly asks to be remembered or forgotten"),
];

/// The extraction call's instruction; `{topics}` is replaced by the topics, one a line.
pub const EXTRACTION_INSTRUCTION: &str = "You extract memories from a conversation between a user \
and an AI agent, to be recalled in later conversations. Keep only what belongs to these topics:\n\
{topics}\n\
Write each memory as one short, standalone fact in the third person (\"The user prefers window \
seats.\"), in the language of the conversation; never invent what was not said. Answer with JSON \
only, exactly {\"facts\": [\"...\", \"...\"]}; answer {\"facts\": []} when nothing is worth \
remembering.";

/// The consolidation call's instruction.
pub const CONSOLIDATION_INSTRUCTION: &str = "You keep a user's memories consistent. You are given \
existing memories (id and fact) and new facts. For each new fact: if no memory holds it, create \
it; if it changes or refines a memory, update that memory with the merged fact; if it contradicts a \
memory, delete that memory and create the new fact; if a memory already says it, do nothing. \
Answer with JSON only, exactly {\"actions\": [{\"action\": \"CREATED\", \"fact\": \"...\"}, \
{\"action\": \"UPDATED\", \"id\": \"...\", \"fact\": \"...\"}, {\"action\": \"DELETED\", \"id\": \
\"...\"}]}, naming only the ids given; answer {\"actions\": []} when nothing changes.";

/// How a generation writes what it creates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerateOptions {
    /// The topics to keep (Memory Bank's `allowed_topics`; see [`topic_lines`]); all managed
    /// topics when empty.
    pub topics: Vec<Value>,
    /// When created memories expire; `None`: the app's default.
    pub expire_micros: Option<i64>,
    /// Metadata of created memories, and which of its keys are times.
    pub metadata: serde_json::Map<String, Value>,
    /// The keys of `metadata` that are times.
    pub timestamp_keys: Vec<String>,
    /// How the revisions of what it writes are kept (the extracted facts are added to them).
    pub revision: RevisionOptions,
    /// Create every fact, without reading the scope's memories near it (Memory Bank's
    /// `disable_consolidation`).
    pub disable_consolidation: bool,
    /// How `metadata` applies to the memories consolidation updates.
    pub metadata_merge: MetadataMerge,
}

/// How a generation's metadata applies to the memories its consolidation updates (Memory Bank's
/// `metadata_merge_strategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetadataMerge {
    /// The memory keeps its metadata, the generation's added over it (a key in both takes the
    /// generation's value). The default.
    #[default]
    Merge,
    /// The memory's metadata becomes the generation's.
    Overwrite,
    /// Only memories whose metadata is exactly the generation's are consolidated with; the
    /// others are left as they are.
    RequireExactMatch,
}

impl MetadataMerge {
    /// The strategy Memory Bank names so (any case); `METADATA_MERGE_STRATEGY_UNSPECIFIED` is
    /// the default.
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_uppercase().as_str() {
            "MERGE" | "METADATA_MERGE_STRATEGY_UNSPECIFIED" | "" => Ok(Self::Merge),
            "OVERWRITE" => Ok(Self::Overwrite),
            "REQUIRE_EXACT_MATCH" => Ok(Self::RequireExactMatch),
            other => Err(Error::invalid(
                "metadata_merge_strategy",
                format!("{other:?} is not one of MERGE, OVERWRITE, REQUIRE_EXACT_MATCH"),
            )),
        }
    }

    /// `memory`'s metadata once a generation with `options` updated it.
    fn apply(self, memory: &mut BankMemory, options: &GenerateOptions) {
        match self {
            Self::Merge => {
                for (key, value) in &options.metadata {
                    memory.metadata.insert(key.clone(), value.clone());
                    memory.timestamp_keys.retain(|k| k != key);
                }
                memory.timestamp_keys.extend(options.timestamp_keys.iter().cloned());
            }
            Self::Overwrite => {
                memory.metadata.clone_from(&options.metadata);
                memory.timestamp_keys.clone_from(&options.timestamp_keys);
            }
            Self::RequireExactMatch => {}
        }
    }
}

impl GenerateOptions {
    /// A new memory of `scope` with `fact`, written as these options say.
    pub fn new_memory(&self, id: String, scope: Scope, fact: String) -> BankMemory {
        let mut memory = BankMemory::new(id, scope, fact);
        memory.expire_micros = self.expire_micros;
        memory.metadata.clone_from(&self.metadata);
        memory.timestamp_keys.clone_from(&self.timestamp_keys);
        memory
    }
}

/// Nearest memories read per new fact for consolidation, and at most in all.
const NEAREST: usize = 3;
const MAX_EXISTING: usize = 20;

/// The topics' lines of the extraction instruction: Memory Bank's managed topics by name
/// (`{"managedMemoryTopic": "USER_PREFERENCES"}`), custom ones by label and description
/// (`{"customMemoryTopic": {"label", "description"}}`); all managed topics when none are given.
pub fn topic_lines(topics: &[Value]) -> Result<Vec<String>> {
    if topics.is_empty() {
        return Ok(MANAGED_TOPICS.iter().map(|(_, what)| format!("- {what}")).collect());
    }
    let managed = |name: &str| MANAGED_TOPICS.iter().find(|(n, _)| *n == name).map(|(_, what)| format!("- {what}"));
    topics
        .iter()
        .map(|topic| {
            let field = |camel: &str, snake: &str| topic.get(camel).or_else(|| topic.get(snake));
            if let Some(name) = field("managedMemoryTopic", "managed_memory_topic").and_then(Value::as_str) {
                let names = MANAGED_TOPICS.map(|(n, _)| n).join(", ");
                return managed(name).ok_or_else(|| {
                    Error::invalid("topics", format!("unknown managed topic {name:?}; one of {names}"))
                });
            }
            let custom = field("customMemoryTopic", "custom_memory_topic")
                .ok_or_else(|| Error::invalid("topics", format!("{topic} is neither a managed nor a custom topic")))?;
            let text = |key: &str| custom.get(key).and_then(Value::as_str).filter(|t| !t.trim().is_empty());
            match (text("label"), text("description")) {
                (Some(label), Some(description)) => Ok(format!("- {label}: {description}")),
                (Some(label), None) => Ok(format!("- {label}")),
                _ => Err(Error::invalid("topics", format!("custom topic {custom} needs a label"))),
            }
        })
        .collect()
}

/// The JSON object of a model's answer (inside a code fence, if it wrote one).
fn answer_json(answer: &str) -> Result<serde_json::Map<String, Value>> {
    let text = answer.trim();
    let text = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|t| t.trim_end().strip_suffix("```"))
        .unwrap_or(text)
        .trim();
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(malformed("it is not a JSON object", answer)),
    }
}

fn malformed(why: &str, answer: &str) -> Error {
    let shown: String = answer.chars().take(200).collect();
    let message = format!("the memory model's answer is not the JSON asked for ({why}): {shown:?}");
    Error::backend(message.clone(), false, message)
}

fn fact_text(value: &Value, answer: &str) -> Result<String> {
    match value.as_str().map(str::trim) {
        Some(fact) if fact.len() > MAX_FACT_BYTES => {
            Err(malformed(&format!("a fact over {MAX_FACT_BYTES} bytes"), answer))
        }
        Some(fact) if !words(fact).is_empty() => Ok(fact.to_owned()),
        _ => Err(malformed("a fact that is not a string with words", answer)),
    }
}

/// The facts of an extraction answer.
pub fn parse_facts(answer: &str) -> Result<Vec<String>> {
    let mut map = answer_json(answer)?;
    let Some(Value::Array(facts)) = map.remove("facts") else {
        return Err(malformed("no \"facts\" list", answer));
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for fact in &facts {
        let fact = fact_text(fact, answer)?;
        if seen.insert(fact.clone()) {
            out.push(fact);
        }
    }
    Ok(out)
}

/// One action of a consolidation answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    /// A new memory with this fact.
    Create(String),
    /// The memory with this id gets this fact.
    Update(String, String),
    /// The memory with this id goes.
    Delete(String),
}

/// The actions of a consolidation answer, on the memories `ids` only.
pub fn parse_actions(answer: &str, ids: &BTreeSet<String>) -> Result<Vec<Planned>> {
    let mut map = answer_json(answer)?;
    let Some(Value::Array(actions)) = map.remove("actions") else {
        return Err(malformed("no \"actions\" list", answer));
    };
    let mut touched = BTreeSet::new();
    let mut out = Vec::new();
    for action in &actions {
        let id = || -> Result<String> {
            let id = action.get("id").and_then(Value::as_str).unwrap_or_default();
            if !ids.contains(id) {
                return Err(malformed(&format!("an id it was not given: {id:?}"), answer));
            }
            Ok(id.to_owned())
        };
        let planned = match action.get("action").and_then(Value::as_str) {
            Some("CREATED") => Planned::Create(fact_text(action.get("fact").unwrap_or(&Value::Null), answer)?),
            Some("UPDATED") => Planned::Update(id()?, fact_text(action.get("fact").unwrap_or(&Value::Null), answer)?),
            Some("DELETED") => Planned::Delete(id()?),
            _ => return Err(malformed("an action that is not CREATED, UPDATED or DELETED", answer)),
        };
        if let Planned::Update(id, _) | Planned::Delete(id) = &planned
            && !touched.insert(id.clone())
        {
            return Err(malformed(&format!("two actions on {id:?}"), answer));
        }
        out.push(planned);
    }
    Ok(out)
}

impl MemoryService {
    /// With `models` writing Memory Bank's memories from conversations.
    pub fn with_fact_models(mut self, models: FactModels) -> Self {
        self.fact_models = models;
        self
    }

    /// Whether `app` has a fact model.
    pub fn has_fact_model(&self, app: &str) -> bool {
        self.fact_models.of(app).is_some()
    }

    /// Memory Bank's generation from a conversation (see the module): the facts the app's model
    /// extracts, consolidated with the scope's memories of `engine`, created as `options` says.
    /// `new_id` names each new memory. Without a model for the app, `Unsupported`; a model answer
    /// that is not the JSON asked for writes nothing.
    pub async fn bank_generate(
        &self,
        engine: &str,
        scope: &Scope,
        turns: &[Turn],
        options: &GenerateOptions,
        new_id: &(dyn Fn() -> String + Send + Sync),
    ) -> Result<Vec<Generated>> {
        let model = self.fact_model(engine, "generate memories from conversations")?;
        let topics = topic_lines(&options.topics)?.join("\n");
        let conversation: Vec<String> =
            turns.iter().filter(|t| !t.text.trim().is_empty()).map(|t| format!("{}: {}", t.role, t.text)).collect();
        if conversation.is_empty() {
            return Ok(Vec::new());
        }
        let instruction = EXTRACTION_INSTRUCTION.replace("{topics}", &topics);
        let facts = parse_facts(&model.answer(&instruction, &conversation.join("\n")).await?)?;
        self.bank_consolidate(engine, scope, facts, options, new_id).await
    }

    fn fact_model(&self, engine: &str, operation: &'static str) -> Result<std::sync::Arc<dyn super::FactModel>> {
        self.fact_models
            .of(engine)
            .cloned()
            .ok_or(Error::Unsupported { operation, capability: "a memory model (serve --memory-model)" })
    }

    /// Memory Bank's generation from facts given (`direct_memories_source`, or those a
    /// conversation yielded): consolidated with the scope's memories of `engine` near them by the
    /// app's model (the second call of the module), what it decided written; each fact created
    /// when there are none near, or with `options.disable_consolidation`.
    pub async fn bank_consolidate(
        &self,
        engine: &str,
        scope: &Scope,
        facts: Vec<String>,
        options: &GenerateOptions,
        new_id: &(dyn Fn() -> String + Send + Sync),
    ) -> Result<Vec<Generated>> {
        if facts.is_empty() {
            return Ok(Vec::new());
        }
        let mut existing: Vec<BankMemory> = Vec::new();
        if !options.disable_consolidation {
            let eligible = |m: &BankMemory| {
                options.metadata_merge != MetadataMerge::RequireExactMatch || m.metadata == options.metadata
            };
            for fact in &facts {
                for near in self.bank_search(engine, scope, fact, NEAREST).await? {
                    if existing.len() < MAX_EXISTING && eligible(&near) && !existing.iter().any(|m| m.id == near.id) {
                        existing.push(near);
                    }
                }
            }
        }
        let planned = if existing.is_empty() {
            facts.iter().cloned().map(Planned::Create).collect()
        } else {
            let model = self.fact_model(engine, "consolidate memories")?;
            let given: Vec<Value> = existing.iter().map(|m| json!({"id": m.id, "fact": m.fact})).collect();
            let input = json!({"existing": given, "new": facts}).to_string();
            let ids = existing.iter().map(|m| m.id.clone()).collect();
            parse_actions(&model.answer(CONSOLIDATION_INSTRUCTION, &input).await?, &ids)?
        };
        let revision = RevisionOptions { extracted: facts.clone(), ..options.revision.clone() };
        let mut done = Vec::with_capacity(planned.len());
        for plan in planned {
            let held = |id: &str| existing.iter().find(|m| m.id == id);
            match plan {
                Planned::Create(fact) => {
                    let memory = options.new_memory(new_id(), scope.clone(), fact);
                    let memory = self.bank_create(engine, memory, &revision).await?;
                    done.push(Generated { memory, action: Action::Created, previous_revision: None });
                }
                Planned::Update(id, fact) => {
                    let Some(before) = held(&id) else { continue };
                    let mut after = before.clone();
                    after.fact = fact;
                    options.metadata_merge.apply(&mut after, options);
                    if let Some(memory) = self.bank_update(engine, before, after, &revision).await? {
                        let previous_revision = before.revisions().last().map(|r| r.id.clone());
                        done.push(Generated { memory, action: Action::Updated, previous_revision });
                    }
                }
                Planned::Delete(id) => {
                    let Some(memory) = held(&id) else { continue };
                    if self.bank_delete(engine, memory).await? {
                        done.push(Generated {
                            memory: memory.clone(),
                            action: Action::Deleted,
                            previous_revision: None,
                        });
                    }
                }
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly_fences_aside() {
        assert_eq!(parse_facts(r#"{"facts": ["a b", "a b", " c "]}"#).unwrap(), ["a b", "c"]);
        assert_eq!(parse_facts("```json\n{\"facts\": []}\n```").unwrap(), Vec::<String>::new());
        for bad in [
            "facts: a",
            r#"{"facts": "a"}"#,
            r#"{"facts": [1]}"#,
            r#"{"facts": [""]}"#,
            r#"{"facts": ["..."]}"#,
            r#"["a"]"#,
        ] {
            let error = parse_facts(bad).unwrap_err().to_string();
            assert!(error.contains("not the JSON asked for"), "{bad}: {error}");
        }
        let ids: BTreeSet<String> = ["m1".to_owned(), "m2".to_owned()].into();
        let answer = r#"{"actions": [{"action": "CREATED", "fact": "x y"}, {"action": "UPDATED", "id": "m1", "fact": "z"},
                                   {"action": "DELETED", "id": "m2"}]}"#;
        assert_eq!(
            parse_actions(answer, &ids).unwrap(),
            [Planned::Create("x y".into()), Planned::Update("m1".into(), "z".into()), Planned::Delete("m2".into())]
        );
        for bad in [
            r#"{"actions": [{"action": "DELETED", "id": "m9"}]}"#,
            r#"{"actions": [{"action": "MERGED", "id": "m1"}]}"#,
            r#"{"actions": [{"action": "DELETED", "id": "m1"}, {"action": "UPDATED", "id": "m1", "fact": "q"}]}"#,
        ] {
            assert!(parse_actions(bad, &ids).is_err(), "{bad}");
        }
    }

    #[test]
    fn metadata_merges_as_the_strategy_says() {
        let scope = Scope::new([("user_id".to_owned(), "u".to_owned())].into()).unwrap();
        let mut memory = BankMemory::new("m", scope, "x y");
        memory.metadata = json!({"a": 1, "b": "old", "at": "2026-01-01T00:00:00Z"}).as_object().unwrap().clone();
        memory.timestamp_keys = vec!["at".into()];
        let options = GenerateOptions {
            metadata: json!({"b": "new", "c": true}).as_object().unwrap().clone(),
            ..Default::default()
        };
        let mut merged = memory.clone();
        MetadataMerge::Merge.apply(&mut merged, &options);
        assert_eq!(
            Value::Object(merged.metadata),
            json!({"a": 1, "b": "new", "at": "2026-01-01T00:00:00Z", "c": true})
        );
        assert_eq!(merged.timestamp_keys, ["at"]);
        let mut overwritten = memory.clone();
        MetadataMerge::Overwrite.apply(&mut overwritten, &options);
        assert_eq!(
            (Value::Object(overwritten.metadata), overwritten.timestamp_keys.len()),
            (json!({"b": "new", "c": true}), 0)
        );
        let mut kept = memory.clone();
        MetadataMerge::RequireExactMatch.apply(&mut kept, &options);
        assert_eq!(kept, memory);
        assert_eq!(MetadataMerge::parse("overwrite").unwrap(), MetadataMerge::Overwrite);
        assert_eq!(MetadataMerge::parse("METADATA_MERGE_STRATEGY_UNSPECIFIED").unwrap(), MetadataMerge::Merge);
        assert!(MetadataMerge::parse("APPEND").is_err());
    }

    #[test]
    fn topics_are_managed_by_name_or_custom_by_label() {
        assert_eq!(topic_lines(&[]).unwrap().len(), 4);
        let lines = topic_lines(&[
            json!({"managedMemoryTopic": "USER_PREFERENCES"}),
            json!({"custom_memory_topic": {"label": "travel", "description": "trips the user plans"}}),
        ])
        .unwrap();
        assert_eq!(lines[1], "- travel: trips the user plans");
        assert!(lines[0].contains("preferences"));
        assert!(topic_lines(&[json!({"managedMemoryTopic": "SECRETS"})]).is_err());
        assert!(topic_lines(&[json!({"colour": 1})]).is_err());
    }
}
