"""The reference's own Runner on AgentstateSessionService: the same turns stored as its
InMemorySessionService stores them, and the guarantees the reference's DatabaseSessionService
lacks, with 16 Runners at once."""

from __future__ import annotations

import asyncio
import tempfile

from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.genai import types

from agentstate_adk import AgentstateSessionService
from scripted import agent


async def two_turns(svc, session_id: str):
    runner = Runner(app_name="app", agent=agent(), session_service=svc)
    await svc.create_session(app_name="app", user_id="u", session_id=session_id, state={"topic": "cats", "user:name": "Ann"})
    for words in ["name Ann", "likes cats"]:
        message = types.Content(role="user", parts=[types.Part(text=words)])
        async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
            pass
    return await svc.get_session(app_name="app", user_id="u", session_id=session_id)


def comparable(session):
    """The session without what legitimately differs: ids, clocks, invocation ids (numbered)."""
    invocations: dict[str, int] = {}
    events = []
    for e in session.events:
        number = invocations.setdefault(e.invocation_id, len(invocations))
        dumped = e.model_dump(mode="json", exclude_none=True, exclude={"id", "timestamp", "invocation_id"})
        for part in (dumped.get("content") or {}).get("parts", []):
            for kind in ("function_call", "function_response"):
                if kind in part:
                    part[kind].pop("id", None)
        events.append((number, dumped))
    return {"state": session.state, "events": events}


def test_a_runner_stores_what_the_reference_stores(server):
    ours = asyncio.run(two_turns(AgentstateSessionService(server.url), "s"))
    theirs = asyncio.run(two_turns(InMemorySessionService(), "s"))
    assert comparable(ours) == comparable(theirs)
    assert ours.state["user:likes"] == "likes cats" and "temp:scratch" not in ours.state
    assert ours.state["last_answer"].startswith("Done. Instruction was: Help name Ann about cats; turns so far 2.")
    assert len(ours.events) == 8


async def sixteen_writers(svc) -> dict:
    """16 Runners at once on 16 sessions of one user, each writing its own user: key."""
    for i in range(16):
        await svc.create_session(app_name="app", user_id="u", session_id=f"s{i}", state={"topic": "t"})

    async def turn(i: int) -> None:
        runner = Runner(app_name="app", agent=agent(), session_service=svc)
        message = types.Content(role="user", parts=[types.Part(text=f"k{i} from session {i}")])
        async for _ in runner.run_async(user_id="u", session_id=f"s{i}", new_message=message):
            pass

    results = await asyncio.gather(*(turn(i) for i in range(16)), return_exceptions=True)
    errors = [r for r in results if isinstance(r, Exception)]
    state = (await svc.get_session(app_name="app", user_id="u", session_id="s0")).state
    return {"kept": sum(1 for i in range(16) if f"user:k{i}" in state), "errors": errors}


def test_sixteen_concurrent_runners_lose_no_user_key(server):
    ours = asyncio.run(sixteen_writers(AgentstateSessionService(server.url)))
    assert ours == {"kept": 16, "errors": []}
