//! Handing the conversation over: `transfer_to_agent`, and which agent the next turn starts with. Each scenario runs on the in-memory service and on SQLite.

use std::sync::Arc;

use agentstate::Value;
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{FunctionTool, LlmAgent, Runner, SequentialAgent};
use serde_json::json;

use crate::support::{answering, authors, create, run, run_ok, schema, services, services_with};

#[tokio::test]
async fn the_model_can_transfer_to_a_sub_agent() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let billing_model = ScriptedModel::new("b").reply(LlmResponse::text("Your bill is 10."));
    let billing = LlmAgent::builder("billing", billing_model.clone()).description("Bills.").build().unwrap();
    let root_model =
        ScriptedModel::new("r").reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "billing"})));
    let root = LlmAgent::builder("front_desk", root_model.clone()).sub_agent(billing).build().unwrap();
    let events = run_ok(&Runner::new("app", root, service.clone()), "s", "my bill?").await;
    assert_eq!(authors(&events), ["front_desk", "front_desk", "billing"]);
    assert_eq!(events[1].actions.transfer_to_agent.as_deref(), Some("billing"));
    let tool = &root_model.requests()[0].tools[0];
    assert_eq!(tool.name, "transfer_to_agent");
    assert!(tool.description.contains("billing: Bills."));
    assert_eq!(tool.parameters["properties"]["agent_name"]["enum"], json!(["billing"]));

    // A target the model made up goes back to it as an error (the schema lists the agents)…
    create(&service, "s2").await;
    let lost = ScriptedModel::new("r")
        .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "nobody"})))
        .reply(LlmResponse::text("Let me help myself."));
    let helper = LlmAgent::builder("helper", ScriptedModel::new("h")).build().unwrap();
    let root = LlmAgent::builder("front_desk", lost).sub_agent(helper).build().unwrap();
    let events = run_ok(&Runner::new("app", root, service.clone()), "s2", "?").await;
    let answer = events[1].content.as_ref().unwrap().parts()[0].function_response.clone().unwrap();
    assert_eq!(
        answer.response.unwrap()["error"],
        json!(
            r#"Invalid arguments for tool 'transfer_to_agent': argument 'agent_name' must be one of ["helper"], not "nobody""#
        )
    );
    // …and a tool that hands over to an agent that does not exist ends the run, naming it.
    create(&service, "s3").await;
    let ghost = FunctionTool::new("escalate", "", schema(), |_, ctx| {
        ctx.actions_mut().transfer_to_agent = Some("ghost".into());
        Ok(Value::Null)
    });
    let model = ScriptedModel::new("r").reply(LlmResponse::call("escalate", json!({})));
    let root = LlmAgent::builder("front_desk", model).tool(ghost).build().unwrap();
    let (_, error) = run(&Runner::new("app", root, service.clone()), "s3", "?").await;
    assert_eq!(error.unwrap().to_string(), "Agent not found: ghost");
}

#[tokio::test]
async fn the_next_turn_resumes_with_the_agent_the_conversation_was_handed_to() {
    for (name, service) in services_with("s").await {
        let desk_model = ScriptedModel::new("d")
            .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "billing"})))
            .reply(LlmResponse::text("Anything else?"))
            .reply(LlmResponse::text("Goodbye."));
        let billing_model = ScriptedModel::new("b")
            .reply(LlmResponse::text("Your bill is 10."))
            .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "front_desk"})));
        let billing = LlmAgent::builder("billing", billing_model.clone()).description("Bills.").build().unwrap();
        let support = LlmAgent::builder("support", ScriptedModel::new("s")).description("Support.").build().unwrap();
        let desk =
            LlmAgent::builder("front_desk", desk_model.clone()).sub_agent(billing).sub_agent(support).build().unwrap();
        let runner = Runner::new("app", desk, service.clone());

        let first = run_ok(&runner, "s", "my bill?").await;
        assert_eq!(authors(&first), ["front_desk", "front_desk", "billing"], "{name}");
        // The user answers billing: the turn starts there; billing hands back to its parent.
        let second = run_ok(&runner, "s", "thanks, that's all for billing").await;
        assert_eq!(authors(&second), ["billing", "billing", "front_desk"], "{name}");
        let tools = &billing_model.requests()[1].tools;
        let transfer = tools.iter().find(|t| t.name == "transfer_to_agent").unwrap();
        assert_eq!(transfer.parameters["properties"]["agent_name"]["enum"], json!(["front_desk", "support"]));
        // The instruction says whom it may hand over to, as the reference's does.
        let instruction = billing_model.requests()[1].system_instruction.clone().unwrap();
        assert!(
            instruction.contains("Other agents can take over the conversation:\n- front_desk: \n- support: Support."),
            "{instruction}"
        );
        // front_desk answered last: the next turn starts at the root again.
        let third = run_ok(&runner, "s", "bye").await;
        assert_eq!(authors(&third), ["front_desk"], "{name}");
        assert_eq!(desk_model.requests().len(), 3);
    }
}

#[tokio::test]
async fn a_workflow_restarts_from_its_root_every_turn() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let model = answering(&["one", "two"]);
    let step = LlmAgent::builder("step", model.clone()).build().unwrap();
    let pipeline = SequentialAgent::new("pipeline", vec![Arc::new(step)]).unwrap();
    let extra_model = ScriptedModel::new("x").reply(LlmResponse::text("extra")).reply(LlmResponse::text("extra 2"));
    let extra = LlmAgent::builder("extra", extra_model).build().unwrap();
    let root = SequentialAgent::new("root", vec![Arc::new(pipeline), Arc::new(extra)]).unwrap();
    let runner = Runner::new("app", root, service.clone());
    run_ok(&runner, "s", "1").await;
    let events = run_ok(&runner, "s", "2").await;
    // "extra" answered last, but its parent is a workflow: the turn starts at the root.
    assert_eq!(authors(&events)[0], "step");
    assert!(
        LlmAgent::builder("a", ScriptedModel::new("m"))
            .tool(FunctionTool::new("transfer_to_agent", "", schema(), |_, _| Ok(Value::Null)))
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn an_agent_that_may_not_hand_back_gives_the_next_turn_to_the_root() {
    let (_, service) = services().await.remove(0);
    create(&service, "s").await;
    let desk_model = ScriptedModel::new("d")
        .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "billing"})))
        .reply(LlmResponse::text("Front desk again."));
    let billing_model = ScriptedModel::new("b").reply(LlmResponse::text("Your bill is 10."));
    let billing = LlmAgent::builder("billing", billing_model.clone())
        .disallow_transfer_to_parent()
        .disallow_transfer_to_peers()
        .build()
        .unwrap();
    let support = LlmAgent::builder("support", ScriptedModel::new("s")).build().unwrap();
    let desk = LlmAgent::builder("front_desk", desk_model).sub_agent(billing).sub_agent(support).build().unwrap();
    let runner = Runner::new("app", desk, service.clone());
    assert_eq!(authors(&run_ok(&runner, "s", "bill?").await), ["front_desk", "front_desk", "billing"]);
    // billing was offered nobody to hand over to…
    assert!(billing_model.requests()[0].tools.is_empty());
    // …and the next turn starts at the root.
    assert_eq!(authors(&run_ok(&runner, "s", "and then?").await), ["front_desk"]);
}
