//! Long-term memory, the sibling of sessions: what an agent recalls across conversations, as
//! ADK's memory services keep it. [`MemoryService`] holds the rules; a store keeps memories with
//! the [`MemoryStore`](crate::store::MemoryStore) capability; [`words`] is how text is matched
//! (ADK for Python's in-memory service's rules, its oracle) and [`terms`] how every engine's
//! full-text index finds the candidates; [`embed`] adds search by meaning, when an app has an
//! embedding provider.

pub mod bank;
pub mod embed;
mod fact_model;
pub mod generate;
pub mod model;
mod search;
mod service;
pub mod terms;
pub mod words;

pub use bank::{BankMemory, BankPage, EngineCursor, EnginePage, Retrieved, Revision, RevisionOptions, Scope};
pub use embed::{Embedder, Embedders, Purpose, SearchMode};
pub use fact_model::{FactModel, FactModels};
pub use generate::{Action, GenerateOptions, Generated, MetadataMerge, Turn};
pub use model::{Memory, MemoryOwner, text_of};
pub use search::SearchOptions;
pub use service::{
    DEFAULT_SEARCH_LIMIT, MAX_MEMORY_PAGE, MemoryLimits, MemoryOptions, MemoryPage, MemoryService, MemoryTtls,
    NewMemory, TTL_METADATA_KEY,
};
