"""Writes sessions with google-adk 2.13.0's RedisSessionService, then prints them as it reads
them back (JSON, one list). Used by agentstate-redis's import test.

usage: adk_redis.py REDIS_URL KEY_PREFIX
"""

import asyncio
import json
import sys

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig
from google.genai import types


async def main(url: str, prefix: str) -> None:
    service = RedisSessionService(RedisSessionServiceConfig(uri=url, key_prefix=prefix, ttl_seconds=3600))
    written = []
    for user, sid in [("alice", "s1"), ("alice", "s:2"), ("bob:x", "s1")]:
        session = await service.create_session(
            app_name="interop",
            user_id=user,
            session_id=sid,
            state={"k": 1, "app:plan": "gold", f"user:name": user, "temp:scratch": True},
        )
        for i in range(3):
            event = Event(
                invocation_id=f"inv-{i}",
                author="user" if i % 2 == 0 else "agent",
                content=types.Content(role="user", parts=[types.Part(text=f"turn {i} of {user}/{sid} — ✓")]),
                actions=EventActions(state_delta={"k": i, "user:turns": i, "app:n": 1.25 * i, "nested": {"a": [1, None]}}),
            )
            await service.append_event(session, event)
        call = Event(
            invocation_id="inv-3",
            author="agent",
            content=types.Content(
                role="model", parts=[types.Part(function_call=types.FunctionCall(name="lookup", args={"q": "x"}))]
            ),
        )
        await service.append_event(session, call)
        written.append((user, sid))
    out = []
    for user, sid in written:
        session = await service.get_session(app_name="interop", user_id=user, session_id=sid)
        out.append(session.model_dump(mode="json"))
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2]))
