"""Two turns of ADK for Python's Runner on AgentstateSessionService, against the server at argv[1],
from the installed wheels: the state and events it stored read back."""

import asyncio
import sys

from google.adk.agents import BaseAgent
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.genai import types

from agentstate_adk import AgentstateSessionService


class Counter(BaseAgent):
    async def _run_async_impl(self, ctx):
        turns = ctx.session.state.get("turns", 0) + 1
        yield Event(
            invocation_id=ctx.invocation_id,
            author=self.name,
            content=types.Content(role="model", parts=[types.Part(text=f"turn {turns}")]),
            actions=EventActions(state_delta={"turns": turns, "user:name": "Ann"}),
        )


async def main(url: str) -> None:
    service = AgentstateSessionService(url)
    runner = Runner(app_name="dist", agent=Counter(name="counter"), session_service=service)
    session = await service.create_session(app_name="dist", user_id="u")
    for text in ("hello", "again"):
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
    stored = await service.get_session(app_name="dist", user_id="u", session_id=session.id)
    assert stored is not None and stored.state == {"turns": 2, "user:name": "Ann"}, stored
    assert [e.author for e in stored.events] == ["user", "counter", "user", "counter"], stored.events
    await service.close()
    print(f"ADK for Python: 2 turns stored, state {stored.state}")


asyncio.run(main(sys.argv[1]))
