"""An agent whose model answers from the request alone, so that `adk api_server` and agentstate
(tests/it/differential.rs builds the same agent in Rust) can be compared on /run: first a call of
`remember` with the user's text, then a text echoing the instruction the model was given."""
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import ToolContext
from google.genai import types


class Scripted(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1]
        if any(p.function_response for p in last.parts or []):
            text = "Done. Instruction was: " + llm_request.config.system_instruction
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
        else:
            said = "".join(p.text or "" for p in last.parts or [])
            call = types.FunctionCall(name="remember", args={"name": said})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def remember(name: str, tool_context: ToolContext) -> dict:
    """Remembers the user's name."""
    tool_context.state["user:name"] = name
    tool_context.state["temp:scratch"] = "never stored"
    return {"remembered": name}


root_agent = LlmAgent(
    name="greeter",
    model=Scripted(),
    instruction="Greet {user:name?} about {topic}; mood {mood?}.",
    output_key="last_greeting",
    tools=[remember],
)
