//! A second run of a session while the first still goes, under each policy: the stored history is
//! what the policy promises, never interleaved. The two runs come from two runners (as from two
//! servers): they share nothing but the store's leases.

use std::time::Duration;

use agentstate::SessionService;
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::{Gate, ScriptedModel};
use agentstate_runtime::{DoubleTexting, LlmAgent, RunConcurrency, Runner, RuntimeError};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::support::{run, run_ok, services_with, stored};

type Outcome = (Vec<agentstate::Event>, Option<RuntimeError>);

fn concurrency(policy: DoubleTexting) -> RunConcurrency {
    // Short leases: the running run renews (and sees an interruption) every 25 ms.
    RunConcurrency { policy, lease_ttl: Duration::from_millis(100), ..RunConcurrency::default() }
}

/// The first run, started and parked in its model call (its message stored).
async fn first_run(service: &SessionService, policy: DoubleTexting) -> (Gate, JoinHandle<Outcome>) {
    let gate = Gate::new();
    let model = ScriptedModel::new("slow").reply(LlmResponse::text("late answer")).gated(gate.clone());
    let agent = LlmAgent::builder("slow", model).output_key("slow_out").build().unwrap();
    let runner = Runner::new("app", agent, service.clone()).concurrency(concurrency(policy));
    let first = tokio::spawn(async move { run(&runner, "s", "first").await });
    gate.called().await;
    (gate, first)
}

fn second_runner(service: &SessionService, policy: DoubleTexting) -> Runner {
    let model = ScriptedModel::new("m").reply(LlmResponse::text("quick"));
    let agent = LlmAgent::builder("fast", model).output_key("fast_out").build().unwrap();
    Runner::new("app", agent, service.clone()).concurrency(concurrency(policy))
}

fn texts(session: &agentstate::Session) -> Vec<String> {
    session.events().iter().map(|e| e.text()).collect()
}

#[tokio::test]
async fn reject_refuses_the_second_run_and_stores_nothing_of_it() {
    for (name, service) in services_with("s").await {
        let (gate, first) = first_run(&service, DoubleTexting::Reject).await;
        let (events, error) = run(&second_runner(&service, DoubleTexting::Reject), "s", "second").await;
        assert!(events.is_empty(), "{name}");
        assert!(matches!(error, Some(RuntimeError::SessionBusy(ref s)) if s == "s"), "{name}: {error:?}");
        gate.release();
        let (_, error) = first.await.unwrap();
        assert!(error.is_none(), "{name}: {error:?}");
        let session = stored(&service, "s").await;
        assert_eq!(texts(&session), ["first", "late answer"], "{name}");
        // Once the first ended, the session is free again.
        run_ok(&second_runner(&service, DoubleTexting::Reject), "s", "again").await;
    }
}

#[tokio::test]
async fn enqueue_runs_the_second_after_the_first_on_the_state_it_left() {
    for (name, service) in services_with("s").await {
        let (gate, first) = first_run(&service, DoubleTexting::Enqueue).await;
        let runner = second_runner(&service, DoubleTexting::Enqueue);
        let second = tokio::spawn(async move { run(&runner, "s", "second").await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(texts(&stored(&service, "s").await), ["first"], "{name}: the second waits its turn");
        gate.release();
        assert!(first.await.unwrap().1.is_none(), "{name}");
        let (events, error) = second.await.unwrap();
        assert!(error.is_none(), "{name}: {error:?}");
        assert_eq!(events.len(), 1, "{name}");
        let session = stored(&service, "s").await;
        assert_eq!(texts(&session), ["first", "late answer", "second", "quick"], "{name}");
        assert_eq!(session.state().get("slow_out"), Some(&json!("late answer")));
        assert_eq!(session.state().get("fast_out"), Some(&json!("quick")));
    }
}

#[tokio::test]
async fn enqueue_refuses_past_its_bound() {
    for (name, service) in services_with("s").await {
        let (gate, first) = first_run(&service, DoubleTexting::Enqueue).await;
        let bounded = RunConcurrency { max_wait: Duration::from_millis(150), ..concurrency(DoubleTexting::Enqueue) };
        let (events, error) =
            run(&second_runner(&service, DoubleTexting::Enqueue).concurrency(bounded), "s", "x").await;
        assert!(events.is_empty());
        let message = error.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(matches!(error, Some(RuntimeError::RunNotQueued { .. })), "{name}: {error:?}");
        assert!(message.contains("waited 150ms"), "{name}: {message}");
        // A full queue of one runner: one run waits, the next is refused at once.
        let one = RunConcurrency { max_queued: 1, ..concurrency(DoubleTexting::Enqueue) };
        let runner = second_runner(&service, DoubleTexting::Enqueue).concurrency(one);
        let waiting = {
            let runner = runner.clone();
            tokio::spawn(async move { run(&runner, "s", "queued").await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (_, error) = run(&runner, "s", "one too many").await;
        assert!(matches!(error, Some(RuntimeError::RunNotQueued { .. })), "{name}: {error:?}");
        gate.release();
        assert!(first.await.unwrap().1.is_none());
        assert!(waiting.await.unwrap().1.is_none());
        let session = stored(&service, "s").await;
        assert_eq!(texts(&session), ["first", "late answer", "queued", "quick"], "{name}: nothing of the refused");
    }
}

#[tokio::test]
async fn interrupt_stops_the_first_at_its_next_event_and_marks_its_turn() {
    for (name, service) in services_with("s").await {
        let (gate, first) = first_run(&service, DoubleTexting::Interrupt).await;
        let runner = second_runner(&service, DoubleTexting::Interrupt);
        let second = tokio::spawn(async move { run(&runner, "s", "second").await });
        // The first renews every 25 ms and sees the request on its next renewal; its model then
        // answers, and the answer (its next event) is where it stops.
        tokio::time::sleep(Duration::from_millis(300)).await;
        gate.release();
        let (events, error) = first.await.unwrap();
        assert!(error.is_none(), "{name}: {error:?}");
        let last = events.last().expect("the interrupted turn's last event");
        assert_eq!(last.extra.get("interrupted"), Some(&json!(true)), "{name}");
        assert_eq!(last.author, "slow");
        let (_, error) = second.await.unwrap();
        assert!(error.is_none(), "{name}: {error:?}");
        let session = stored(&service, "s").await;
        assert_eq!(texts(&session), ["first", "", "second", "quick"], "{name}: the late answer is not stored");
        let marker = &session.events()[1];
        assert_eq!(marker.extra.get("interrupted"), Some(&json!(true)), "{name}: stored marked");
        assert!(!session.state().contains("slow_out"), "{name}");
        assert_eq!(session.state().get("fast_out"), Some(&json!("quick")));
    }
}
