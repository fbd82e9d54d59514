//! Long-term memory: what is found (ADK for Python's in-memory service is the oracle, through
//! `agentstate::memory::words`), what adding a session or events again stores, direct writes and
//! their refusals.

use agentstate::memory::words::{matched, words};
use agentstate::memory::{MemoryOptions, MemoryOwner, MemoryService, NewMemory};
use agentstate::{Content, CreateSession, ErrorKind, Event, Part, Session, Timestamp};
use serde_json::json;

use super::Svc;
use crate::unique;

/// The memory service of the harness (every stack keeps memories; through encryption at rest they
/// are sealed and their terms blinded), or `None` after checking that a store without the
/// capability refuses memory clearly.
pub(crate) async fn memory_of(svc: &Svc) -> Option<MemoryService> {
    let memory = MemoryService::new(svc.service().clone());
    if memory.is_supported() {
        return Some(memory);
    }
    let owner = MemoryOwner::new("app", "user").unwrap();
    let error = memory.search(&owner, "anything", None).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.to_string().contains("memory"), "{error}");
    None
}

pub(crate) fn said(author: &str, text: &str) -> Event {
    Event::new("inv").author(author).content(Content::text(if author == "user" { "user" } else { "model" }, text))
}

/// A session of `texts` said in turn by the user and the agent, as a handle.
pub(crate) async fn conversation(svc: &Svc, app: &str, user: &str, texts: &[&str]) -> Session {
    let mut session = svc.create_session(CreateSession::new(app, user)).await.unwrap();
    for (i, text) in texts.iter().enumerate() {
        let author = if i % 2 == 0 { "user" } else { "agent" };
        svc.append_event(&mut session, said(author, text)).await.unwrap();
    }
    session
}

/// Texts in several scripts and word shapes. `python/tests/test_memory.py` holds the same list
/// to check ADK for Python's word matching against ours on the same words; change both.
const TEXTS: [&str; 8] = [
    "私はPythonを使う",
    "I write Rust and Python every day",
    "The café on Straße 5 opens at 9",
    "hello_there, general Kenobi",
    "日本語の勉強をしています",
    "Rust is fast; rust never sleeps",
    "Tea or coffee? Green tea, please.",
    "١٢٣abc naïve日本",
];

pub(crate) async fn memories_are_found_as_adk_finds_them(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory");
    let mut session = conversation(&svc, &app, "alice", &TEXTS).await;
    // Events without text are not memories.
    let mut call = Event::new("inv").author("agent");
    call.content =
        Some(Content { parts: Some(vec![Part::default()]), role: Some("model".into()), ..Content::default() });
    svc.append_event(&mut session, call).await.unwrap();
    svc.append_event(&mut session, Event::new("inv").author("agent")).await.unwrap();
    assert_eq!(memory.add_session(&session).await.unwrap(), TEXTS.len());
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    assert_eq!(memory.count(&owner).await.unwrap(), TEXTS.len());

    let queries = [
        "python",
        "thon",
        "Rust",
        "使う",
        "私",
        "はp",
        "日本",
        "勉強",
        "café",
        "cafe",
        "straße",
        "hello_there",
        "hello",
        "١٢",
        "abc",
        "NAÏVE",
        "tea coffee please",
        "what is fast",
        "zzz",
        "rust python tea",
    ];
    for query in queries {
        let found = memory.search(&owner, query, Some(100)).await.unwrap();
        let mut found_texts: Vec<String> = found.iter().map(|m| m.text()).collect();
        let expected: Vec<&str> = TEXTS.iter().copied().filter(|t| matched(&words(query), t) > 0).collect();
        let counts: Vec<usize> = found_texts.iter().map(|t| matched(&words(query), t)).collect();
        assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{query:?}: most words matched first: {counts:?}");
        found_texts.sort();
        let mut expected: Vec<String> = expected.into_iter().map(str::to_owned).collect();
        expected.sort();
        assert_eq!(found_texts, expected, "what {query:?} finds");
    }
    let first = &memory.search(&owner, "python rust", Some(1)).await.unwrap()[0];
    assert_eq!(first.text(), "I write Rust and Python every day", "the one matching both words");

    // A memory is ADK's MemoryEntry: the event's id, content, author and time, and its session.
    let python = memory.search(&owner, "使う", None).await.unwrap();
    assert_eq!(python.len(), 1);
    let event = &session.events()[0];
    assert_eq!(python[0].id, event.id);
    assert_eq!(python[0].content, *event.content.as_ref().unwrap());
    assert_eq!(python[0].author.as_deref(), Some("user"));
    assert_eq!(python[0].session_id.as_deref(), Some(session.id()));
    let time = Timestamp::parse_rfc3339(python[0].timestamp.as_deref().unwrap()).unwrap();
    assert_eq!(time, event.time(), "the timestamp is the event's time, ISO 8601");

    // Limits and refusals.
    assert_eq!(memory.search(&owner, "rust python tea café", Some(2)).await.unwrap().len(), 2);
    for (query, limit) in [("", None), ("  !? ", None), ("rust", Some(0)), ("rust", Some(101))] {
        let error = memory.search(&owner, query, limit).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{query:?} {limit:?}");
    }
    let stranger = MemoryOwner::new(&app, "nobody").unwrap();
    assert!(memory.search(&stranger, "python", None).await.unwrap().is_empty());
}

pub(crate) async fn adding_a_session_again_replaces_what_it_added(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-again");
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let mut session = conversation(&svc, &app, "alice", &["my dog is called Rex", "nice name"]).await;
    for _ in 0..3 {
        assert_eq!(memory.add_session(&session).await.unwrap(), 2);
    }
    assert_eq!(memory.count(&owner).await.unwrap(), 2, "added three times, stored once");
    let before = memory.list(&owner, None, 10).await.unwrap().memories;

    svc.append_event(&mut session, said("user", "and my cat is Tom")).await.unwrap();
    assert_eq!(memory.add_session(&session).await.unwrap(), 3);
    let after = memory.list(&owner, None, 10).await.unwrap().memories;
    assert_eq!(after.len(), 3);
    assert_eq!(after[..2], before[..], "what was there keeps its place and create time");
    assert_eq!(after[2].text(), "and my cat is Tom");

    // A handle with fewer events (a session ADK passes in, held by this store or not) is the
    // session's whole contribution now.
    let other = Session::from_storage(session.key().clone(), Default::default(), [session.events()[2].clone()], 0);
    assert_eq!(memory.add_session(&other).await.unwrap(), 1);
    let found = memory.search(&owner, "dog cat", None).await.unwrap();
    assert_eq!(found.iter().map(|m| m.text()).collect::<Vec<_>>(), ["and my cat is Tom"]);
    // A session with no text at all takes its memories away.
    let empty = Session::from_storage(session.key().clone(), Default::default(), Vec::<Event>::new(), 0);
    assert_eq!(memory.add_session(&empty).await.unwrap(), 0);
    assert_eq!(memory.count(&owner).await.unwrap(), 0);
}

pub(crate) async fn added_events_are_stored_once_per_session(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-events");
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let mut first = said("user", "the meeting is on Tuesday");
    first.id = "e1".into();
    let mut second = said("agent", "noted: Tuesday");
    second.id = "e2".into();
    let none = MemoryOptions::default();
    let events = [first.clone(), second.clone()];
    assert_eq!(memory.add_events(&owner, Some("s1"), &events[..1], &none).await.unwrap(), 1);
    assert_eq!(memory.add_events(&owner, Some("s1"), &events, &none).await.unwrap(), 1, "e1 is there already");
    assert_eq!(memory.add_events(&owner, Some("s1"), &events, &none).await.unwrap(), 0);
    // Without a session id, and in another session, the same ids are other memories.
    assert_eq!(memory.add_events(&owner, None, &events, &none).await.unwrap(), 2);
    assert_eq!(memory.add_events(&owner, None, &events, &none).await.unwrap(), 0);
    assert_eq!(memory.add_events(&owner, Some("s2"), &events, &none).await.unwrap(), 2);
    let found = memory.search(&owner, "tuesday", Some(100)).await.unwrap();
    let mut sources: Vec<(Option<String>, String)> =
        found.iter().map(|m| (m.session_id.clone(), m.id.clone())).collect();
    sources.sort();
    let expected =
        [(None, "e1"), (None, "e2"), (Some("s1"), "e1"), (Some("s1"), "e2"), (Some("s2"), "e1"), (Some("s2"), "e2")];
    let expected: Vec<(Option<String>, String)> =
        expected.iter().map(|(s, id)| (s.map(str::to_owned), (*id).to_owned())).collect();
    assert_eq!(sources, expected);

    // Metadata given with the events is kept on each; an event without an id gets one derived
    // from it, the same each time.
    let tagged = MemoryOptions { custom_metadata: super::obj(json!({"topic": "work"})), ..MemoryOptions::default() };
    let mut anonymous = said("user", "the office moved to Berlin");
    anonymous.id = String::new();
    assert_eq!(memory.add_events(&owner, Some("s3"), std::slice::from_ref(&anonymous), &tagged).await.unwrap(), 1);
    assert_eq!(memory.add_events(&owner, Some("s3"), &[anonymous], &tagged).await.unwrap(), 0, "the same id");
    let berlin = memory.search(&owner, "berlin", None).await.unwrap();
    assert_eq!(berlin[0].custom_metadata.get("topic"), Some(&json!("work")));
    assert!(!berlin[0].id.is_empty());
    assert!(memory.add_events(&owner, Some(" bad"), &events, &none).await.is_err(), "session ids are checked");
}

pub(crate) async fn direct_memories_keep_their_fields_and_bad_ones_write_nothing(svc: Svc) {
    let Some(memory) = memory_of(&svc).await else { return };
    let app = unique("memory-direct");
    let owner = MemoryOwner::new(&app, "alice").unwrap();
    let entry = NewMemory {
        id: Some("fact-1".into()),
        content: Content::text("user", "Alice is allergic to peanuts"),
        custom_metadata: super::obj(json!({"source": "intake form", "confidence": 0.9})),
        author: Some("nurse".into()),
        timestamp: Some("2026-11-01T09:30:00+01:00".into()),
    };
    let anonymous = NewMemory { content: Content::text("user", "Alice lives in Lyon"), ..NewMemory::default() };
    let stored = memory.add_memories(&owner, vec![entry.clone(), anonymous], &MemoryOptions::default()).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert!(!stored[1].id.is_empty(), "an id is generated");
    let found = memory.search(&owner, "peanuts", None).await.unwrap();
    assert_eq!(found.len(), 1);
    let fact = &found[0];
    assert_eq!((fact.id.as_str(), fact.session_id.as_deref()), ("fact-1", None));
    assert_eq!(fact.content, entry.content);
    assert_eq!(fact.custom_metadata, entry.custom_metadata);
    assert_eq!(fact.author.as_deref(), Some("nurse"));
    assert_eq!(fact.timestamp.as_deref(), Some("2026-11-01T09:30:00+01:00"));

    // Refused, and nothing of the call is written.
    let huge = "word ".repeat(memory.limits().max_memory_bytes / 5 + 1);
    let bad_calls: Vec<(Vec<NewMemory>, MemoryOptions)> = vec![
        (vec![NewMemory { content: Content::text("user", "  "), ..NewMemory::default() }], MemoryOptions::default()),
        (vec![NewMemory { content: Content::text("user", huge), ..NewMemory::default() }], MemoryOptions::default()),
        (
            vec![NewMemory { id: Some(" padded".into()), content: Content::text("user", "x"), ..NewMemory::default() }],
            MemoryOptions::default(),
        ),
        (
            vec![NewMemory { content: Content::text("user", "ok"), ..NewMemory::default() }],
            MemoryOptions { custom_metadata: super::obj(json!({"ttl": "soon"})), ..MemoryOptions::default() },
        ),
    ];
    for (mut memories, options) in bad_calls {
        memories.insert(0, NewMemory { content: Content::text("user", "sneaked in"), ..NewMemory::default() });
        let error = memory.add_memories(&owner, memories, &options).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{error}");
    }
    assert!(memory.search(&owner, "sneaked", None).await.unwrap().is_empty(), "nothing of a refused call");
    assert_eq!(memory.count(&owner).await.unwrap(), 2);
    // The same id again is left out, not duplicated.
    assert!(memory.add_memories(&owner, vec![entry], &MemoryOptions::default()).await.is_ok());
    assert_eq!(memory.count(&owner).await.unwrap(), 2);
}
