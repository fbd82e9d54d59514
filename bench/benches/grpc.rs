//! `ListEvents`' reply over gRPC, against its floor: the same page as the REST answer's JSON (what
//! the REST route writes for it). `reply` is what the server does, each event's message written
//! in wire format from the event (`agentstate_server::grpc::events_reply`); `transcoded` is what it
//! did before, kept as the baseline: the REST answer as a JSON tree, read into the message
//! (proto3's JSON mapping), then encoded. Pages of 20 events (a client's page of the newest) and
//! 100 (the default page).
//!
//! Run: `cargo bench -p agentstate-bench --bench grpc`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use agentstate::Event;
use agentstate::wire::engine::EventResource;
use agentstate_bench::{criterion_rows, grown_session, print_ratios, run_criterion};
use agentstate_server::grpc::events_reply;
use agentstate_server::grpc::proto::google::cloud::aiplatform::v1beta1 as api;
use criterion::{BenchmarkId, Criterion};
use prost::Message;

const SIZES: [usize; 2] = [20, 100];
const SESSION: &str = "projects/p/locations/us-central1/reasoningEngines/1/sessions/s1";

/// The REST answer: `{"sessionEvents": [...]}`, each event a resource with its name.
struct RestPage<'a>(&'a [Event], &'a [String]);

struct Resources<'a>(&'a [Event], &'a [String]);

impl serde::Serialize for Resources<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().zip(self.1).map(|(event, name)| EventResource {
            name: Some(name),
            event,
            state_delta: &event.actions.state_delta,
        }))
    }
}

impl serde::Serialize for RestPage<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("sessionEvents", &Resources(self.0, self.1))?;
        map.end()
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("grpc");
    for n in SIZES {
        let events: Vec<Event> = grown_session(n).events().iter().cloned().collect();
        let names: Vec<String> = events.iter().map(|e| format!("{SESSION}/events/{}", e.id)).collect();
        let page = RestPage(&events, &names);
        // The two must be the same message, or the comparison means nothing.
        let transcoded: api::ListEventsResponse = serde_json::from_value(serde_json::to_value(&page).unwrap()).unwrap();
        assert_eq!(events_reply(SESSION, &events, None).unwrap().message().unwrap(), transcoded);
        group.bench_with_input(BenchmarkId::new("reply", n), &events, |b, events| {
            b.iter(|| black_box(events_reply(SESSION, events, None).unwrap()));
        });
        group.bench_with_input(BenchmarkId::new("transcoded", n), &page, |b, page| {
            b.iter(|| {
                let tree = serde_json::to_value(page).unwrap();
                let message: api::ListEventsResponse = serde_json::from_value(tree).unwrap();
                black_box(message.encode_to_vec())
            });
        });
        group.bench_with_input(BenchmarkId::new("floor", n), &page, |b, page| {
            b.iter(|| black_box(serde_json::to_vec(page).unwrap()));
        });
    }
    group.finish();
}

fn summary() {
    for (label, measured) in [("reply", "reply"), ("before (transcoded)", "transcoded")] {
        let rows = criterion_rows(SIZES.iter().map(|n| {
            (vec![format!("{n} events")], "grpc".to_owned(), format!("{measured}/{n}"), format!("floor/{n}"))
        }));
        print_ratios(&[label], "agentstate", &rows);
    }
}

fn main() {
    run_criterion(bench, summary);
}
