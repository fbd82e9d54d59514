//! Rewinding a conversation: the rewound turns leave the model's view and the choice of the
//! agent that answers next, and the session's own state goes back. On in-memory and SQLite.

use agentstate::Content;
use agentstate_runtime::model::LlmResponse;
use agentstate_runtime::testing::ScriptedModel;
use agentstate_runtime::{LlmAgent, Runner, RuntimeError};
use serde_json::json;

use crate::support::{authors, create, run_ok, stored};

fn texts(contents: &[Content]) -> Vec<String> {
    contents.iter().map(Content::joined_text).collect()
}

#[tokio::test]
async fn a_rewound_turn_is_gone_from_the_model_state_and_agent_choice() {
    for (name, service) in crate::support::services().await {
        create(&service, "s").await;
        let desk_model = ScriptedModel::new("d")
            .reply(LlmResponse::text("one"))
            .reply(LlmResponse::call("transfer_to_agent", json!({"agent_name": "billing"})))
            .reply(LlmResponse::text("three"));
        let billing_model = ScriptedModel::new("b").reply(LlmResponse::text("your bill"));
        let billing = LlmAgent::builder("billing", billing_model).description("Bills.").build().unwrap();
        let desk =
            LlmAgent::builder("front_desk", desk_model.clone()).output_key("last").sub_agent(billing).build().unwrap();
        let runner = Runner::new("app", desk, service.clone());

        run_ok(&runner, "s", "first").await;
        let second = run_ok(&runner, "s", "second").await;
        assert_eq!(authors(&second), ["front_desk", "front_desk", "billing"], "{name}");
        // Without the rewind, billing would answer next and the model would see "second".
        let rewind = runner.rewind("u", "s", &second[0].invocation_id).await.unwrap();
        assert_eq!(rewind.actions.rewind_before_invocation_id.as_deref(), Some(second[0].invocation_id.as_str()));
        assert_eq!(stored(&service, "s").await.state().get("last"), Some(&json!("one")), "{name}");

        let third = run_ok(&runner, "s", "third").await;
        assert_eq!(authors(&third), ["front_desk"], "{name}: the turn starts at the root again");
        let seen = texts(&desk_model.requests()[2].contents);
        assert_eq!(seen, ["first", "one", "third"], "{name}: the model does not see the rewound turn");

        let unknown = runner.rewind("u", "s", "no-such-invocation").await.unwrap_err();
        assert!(unknown.to_string().contains("Invocation ID not found: no-such-invocation"), "{unknown}");
        let missing = runner.rewind("u", "nobody", "x").await.unwrap_err();
        assert!(matches!(missing, RuntimeError::SessionNotFound(_)), "{missing}");
    }
}
