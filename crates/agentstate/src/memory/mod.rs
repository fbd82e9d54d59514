//! Long-term memory, the sibling of sessions: what an agent recalls across conversations. This
//! first part is how text is matched: [`words`] splits text into the words ADK's memory services
//! search on.

pub mod words;
