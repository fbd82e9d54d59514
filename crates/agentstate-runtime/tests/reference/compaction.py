"""ADK for Python 2.13 compacting a scripted conversation, for the runtime's comparison test
(`tests/it/compaction.rs`): prints, as JSON, every request the model was sent (summaries
included) and the session's events, so the runtime can be held to the same requests.

Usage: python compaction.py '<EventsCompactionConfig arguments as JSON>' TURNS [--usage]
                             [--continue SQLITE_FILE SESSION_ID FROM_TURN]

With `--usage`, each answer reports a prompt of 10 tokens per content sent. With `--continue`, ADK
goes on with a session another program began in an ADK database (`DatabaseSessionService`), from
turn FROM_TURN to TURNS, and prints the requests of those turns.
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.apps.app import EventsCompactionConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.genai import types

warnings.filterwarnings("ignore")

SUMMARY_PROMPT = "The following is a conversation history"


class Scripted(BaseLlm):
    """A summary named by its prompt's length for a summariser's prompt, "done" after a tool's
    response, else a call of `remember` with what the user said."""

    model: str = "scripted"
    requests: list = []
    usage: bool = False

    async def generate_content_async(self, llm_request, stream=False):
        async for response in self._answer(llm_request):
            if self.usage:
                tokens = 10 * len(llm_request.contents)
                response.usage_metadata = types.GenerateContentResponseUsageMetadata(prompt_token_count=tokens)
            yield response

    async def _answer(self, llm_request):
        self.requests.append([c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents])
        first = "".join(p.text or "" for p in llm_request.contents[0].parts or [])
        if first.startswith(SUMMARY_PROMPT):
            text = f"summary of {len(first)} characters"
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        last = llm_request.contents[-1]
        if any(p.function_response for p in last.parts or []):
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))
            return
        said = "".join(p.text or "" for p in last.parts or [])
        call = types.FunctionCall(name="remember", args={"what": said})
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def remember(what: str) -> dict:
    """Remembers what the user said."""
    return {"remembered": what}


async def main(config: dict, turns: int, usage: bool, going_on: list[str]) -> None:
    model = Scripted(requests=[], usage=usage)
    agent = LlmAgent(name="helper", model=model, instruction="Help.", tools=[remember])
    app = App(name="compacting", root_agent=agent, events_compaction_config=EventsCompactionConfig(**config))
    if going_on:
        database, session_id, first = going_on
        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{database}")
        session = await service.get_session(app_name="compacting", user_id="u", session_id=session_id)
    else:
        service, first = InMemorySessionService(), "1"
        session = await service.create_session(app_name="compacting", user_id="u")
    runner = Runner(app=app, session_service=service)
    for n in range(int(first), turns + 1):
        message = types.Content(role="user", parts=[types.Part(text=f"hi {n}")])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
    session = await service.get_session(app_name="compacting", user_id="u", session_id=session.id)
    events = [e.model_dump(mode="json", exclude_none=True) for e in session.events]
    print(json.dumps({"requests": model.requests, "events": events}))


if __name__ == "__main__":
    rest = sys.argv[3:]
    going_on = rest[rest.index("--continue") + 1 :][:3] if "--continue" in rest else []
    asyncio.run(main(json.loads(sys.argv[1]), int(sys.argv[2]), "--usage" in rest, going_on))
