"""A model that answers from the request alone, so the same turns can run on two session
services and be compared: a call of `remember` with the user's words, then a text naming the
instruction it was given."""

from __future__ import annotations

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
            text = "Done. Instruction was: " + str(llm_request.config.system_instruction)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
        else:
            said = "".join(p.text or "" for p in last.parts or [])
            call = types.FunctionCall(name="remember", args={"what": said})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def remember(what: str, tool_context: ToolContext) -> dict:
    """Remembers what the user said, for this user (and for this invocation only)."""
    tool_context.state[f"user:{what.split()[0]}"] = what
    tool_context.state["temp:scratch"] = "never stored"
    tool_context.state["turns"] = tool_context.state.get("turns", 0) + 1
    return {"remembered": what}


def agent() -> LlmAgent:
    return LlmAgent(
        name="helper",
        model=Scripted(),
        instruction="Help {user:name?} about {topic}; turns so far {turns?}.",
        output_key="last_answer",
        tools=[remember],
    )
