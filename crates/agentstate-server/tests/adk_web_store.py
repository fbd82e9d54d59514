"""Writes an `adk web` local store with the reference's SqliteSessionService, then prints every
session as the reference loads it (JSON). Used by agentstate's import-adk test."""
import asyncio
import json
import sys
import warnings

warnings.filterwarnings("ignore")

from google.adk.events import Event, EventActions  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.genai import types  # noqa: E402


async def main(path):
    svc = SqliteSessionService(path)
    one = await svc.create_session(app_name="web", user_id="u1", session_id="w1",
                                   state={"topic": "x", "app:a": 1, "user:u": "U", "temp:t": 0})
    await svc.append_event(one, Event(invocation_id="i1", author="user", content=types.Content(role="user", parts=[types.Part(text="hi")]),
                                      actions=EventActions(state_delta={"n": 1, "user:u": "U2"})))
    call = types.Part(function_call=types.FunctionCall(id="c1", name="lookup", args={"q": "x"}))
    await svc.append_event(one, Event(invocation_id="i1", author="web_agent", content=types.Content(role="model", parts=[call])))
    two = await svc.create_session(app_name="web", user_id="u2", session_id="w2")
    await svc.append_event(two, Event(invocation_id="i2", author="agent", actions=EventActions(state_delta={"app:a": 2})))
    out = []
    for user, sid in (("u1", "w1"), ("u2", "w2")):
        s = await svc.get_session(app_name="web", user_id=user, session_id=sid)
        out.append({"user_id": user, "id": sid, "state": s.state,
                    "events": [e.model_dump(mode="json", exclude_none=True) for e in s.events]})
    print(json.dumps(out))


asyncio.run(main(sys.argv[1]))
