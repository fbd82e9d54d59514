"""Drives google-adk's DatabaseSessionService (the reference) for agentstate's interoperability
tests. Every command prints one JSON document on stdout.

  write  URL APP                     create sessions py-1 (user u1) and py-2 (user u2) with
                                     scoped state and events; print both
  read   URL APP USER SID            print the session as the reference loads it
  append URL APP USER SID DELTA      load, append an event carrying DELTA (JSON), print the session
  stale  URL APP USER SID DELTA      load, print {"loaded": true}, wait for a line on stdin, append
                                     with the now stale handle, print {"outcome": ..., "message": ...}
  rewind-scenario URL APP USER SID   create the rewind scenario (the same as the Rust test's)
  rewind URL APP USER SID INV        Runner.rewind_async before INV; print {"state", "live"}
  live   URL APP USER SID            print {"state", "live"} as the reference sees them
"""
import asyncio
import json
import sys
import warnings

warnings.filterwarnings("ignore")

from google.adk.events import Event, EventActions  # noqa: E402
from google.adk.sessions import DatabaseSessionService  # noqa: E402
from google.genai import types  # noqa: E402


def dump(session):
    return {
        "id": session.id,
        "app_name": session.app_name,
        "user_id": session.user_id,
        "state": session.state,
        "last_update_time": session.last_update_time,
        "events": [e.model_dump(mode="json", exclude_none=True) for e in session.events],
    }


def text(role, value):
    return types.Content(role=role, parts=[types.Part(text=value)])


async def write(svc, app):
    one = await svc.create_session(
        app_name=app, user_id="u1", session_id="py-1",
        state={"topic": "cats", "app:theme": "dark", "user:name": "Ann", "temp:scratch": 1, "nested": {"a": [1, {"b": None}]}},
    )
    await svc.append_event(one, Event(invocation_id="e-1", author="user", content=text("user", "Hello"),
                                      actions=EventActions(state_delta={"turn": 1, "user:visits": 1, "temp:t": 2})))
    call = types.Part(function_call=types.FunctionCall(id="call-1", name="get_weather", args={"city_name": "Paris"}))
    await svc.append_event(one, Event(invocation_id="e-1", author="agent", branch="root.agent",
                                      content=types.Content(role="model", parts=[call])))
    answer = types.Part(function_response=types.FunctionResponse(id="call-1", name="get_weather", response={"temp_c": 21}))
    await svc.append_event(one, Event(invocation_id="e-1", author="agent", content=types.Content(role="user", parts=[answer]),
                                      actions=EventActions(state_delta={"app:calls": 1, "none": None}),
                                      custom_metadata={"source": "python"}))
    await svc.append_event(one, Event(invocation_id="e-1", author="agent", content=text("model", "It is 21 °C in Paris."),
                                      turn_complete=True))
    two = await svc.create_session(app_name=app, user_id="u2", session_id="py-2", state={"user:name": "Bob"})
    await svc.append_event(two, Event(invocation_id="e-2", author="user", content=text("user", "Hi"),
                                      actions=EventActions(state_delta={"app:theme": "light"})))
    return [dump(await svc.get_session(app_name=app, user_id=u, session_id=s)) for u, s in (("u1", "py-1"), ("u2", "py-2"))]


async def rewind_scenario(svc, app, user, sid):
    """The steps of agentstate's rewind test: a creation state, then invocations A, B (two
    events, one writing a user: key) and C."""
    session = await svc.create_session(app_name=app, user_id=user, session_id=sid, state={"init": 1})
    steps = [
        ("A", "user", "first", {"k": "a", "x": 1}),
        ("B", "user", "second", {"k": "b", "user:u": 1, "y": 2}),
        ("B", "agent", "answer", {"z": 3}),
        ("C", "user", "third", {"k": "c"}),
    ]
    for invocation, author, words, delta in steps:
        await svc.append_event(session, Event(invocation_id=invocation, author=author, content=text(author, words),
                                              actions=EventActions(state_delta=delta)))
    return None


async def live(svc, app, user, sid):
    from google.adk.events._rewind_events import _apply_rewinds
    session = await svc.get_session(app_name=app, user_id=user, session_id=sid)
    events = _apply_rewinds(session.events)
    return {"state": session.state,
            "live": [[e.invocation_id, e.author, "".join(p.text or "" for p in (e.content.parts if e.content else []))]
                     for e in events]}


async def rewind(svc, app, user, sid, invocation):
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    runner = Runner(app_name=app, agent=LlmAgent(name="agent", model="gemini-2.0-flash"), session_service=svc)
    await runner.rewind_async(user_id=user, session_id=sid, rewind_before_invocation_id=invocation)
    return await live(svc, app, user, sid)


async def main():
    command, url, app, *rest = sys.argv[1:]
    svc = DatabaseSessionService(db_url=url)
    try:
        if command == "write":
            result = await write(svc, app)
        elif command == "read":
            user, sid = rest
            session = await svc.get_session(app_name=app, user_id=user, session_id=sid)
            result = dump(session) if session else None
        elif command == "append":
            user, sid, delta = rest
            session = await svc.get_session(app_name=app, user_id=user, session_id=sid)
            await svc.append_event(session, Event(invocation_id="e-py", author="python", content=text("model", "from python"),
                                                  actions=EventActions(state_delta=json.loads(delta))))
            result = dump(await svc.get_session(app_name=app, user_id=user, session_id=sid))
        elif command == "stale":
            user, sid, delta = rest
            session = await svc.get_session(app_name=app, user_id=user, session_id=sid)
            print(json.dumps({"loaded": True}), flush=True)
            sys.stdin.readline()
            try:
                await svc.append_event(session, Event(invocation_id="e-py", author="python",
                                                      actions=EventActions(state_delta=json.loads(delta))))
                result = {"outcome": "ok", "message": ""}
            except Exception as e:  # the reference raises StaleSessionError (a ValueError)
                result = {"outcome": type(e).__name__, "message": str(e)}
        elif command == "rewind-scenario":
            user, sid = rest
            result = await rewind_scenario(svc, app, user, sid)
        elif command == "rewind":
            user, sid, invocation = rest
            result = await rewind(svc, app, user, sid, invocation)
        elif command == "live":
            user, sid = rest
            result = await live(svc, app, user, sid)
        else:
            raise SystemExit(f"unknown command {command}")
    finally:
        await svc.close()
    print(json.dumps(result))


asyncio.run(main())
