"""Runs the same steps through ADK for Python's VertexAiSessionService, pointed at an agentstate
server, and through its InMemorySessionService, and prints what each returned (JSON), for the
Rust test to compare. Usage: reference_client.py BASE_URL MODE ENGINE [TOKEN]

MODE: `short` (no credentials: /v1beta1/reasoningEngines/...), `full` (project and location with
a bearer token: /v1beta1/projects/.../reasoningEngines/...), `apikey` (express mode's
x-goog-api-key).
"""
import asyncio
import json
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore")

from google.adk.events import Event, EventActions  # noqa: E402
from google.adk.sessions import InMemorySessionService, VertexAiSessionService  # noqa: E402
from google.adk.sessions.base_session_service import GetSessionConfig  # noqa: E402
from google.genai import types  # noqa: E402

BASE_URL, MODE, ENGINE = sys.argv[1], sys.argv[2], sys.argv[3]
TOKEN = sys.argv[4] if len(sys.argv) > 4 else None


def vertex_service():
    if MODE == "short":

        class Local(VertexAiSessionService):
            def _api_client_http_options_override(self):
                return types.HttpOptions(base_url=f"{BASE_URL}/v1beta1/", base_url_resource_scope="COLLECTION")

        return Local(agent_engine_id=ENGINE)
    if MODE == "full":
        import google.oauth2.credentials
        from google.adk.dependencies._agentplatform import agentplatform

        class Local(VertexAiSessionService):
            def _build_api_client(self):
                return agentplatform.Client(
                    project=self._project,
                    location=self._location,
                    credentials=google.oauth2.credentials.Credentials(token=TOKEN),
                    http_options=types.HttpOptions(base_url=BASE_URL),
                ).aio

        return Local(project="my-project", location="us-central1", agent_engine_id=ENGINE)
    if MODE == "apikey":
        os.environ["GOOGLE_GENAI_USE_ENTERPRISE"] = "true"

        class Local(VertexAiSessionService):
            def _api_client_http_options_override(self):
                return types.HttpOptions(base_url=BASE_URL)

        return Local(express_mode_api_key=TOKEN, agent_engine_id=ENGINE)
    raise SystemExit(f"unknown mode {MODE}")


def dump_event(e):
    out = e.model_dump(mode="json", exclude_none=True)
    out["timestamp"] = round(e.timestamp, 6)
    return out


def dump_session(s, with_events=True):
    out = {"user_id": s.user_id, "id": s.id, "state": s.state}
    if with_events:
        out["events"] = [dump_event(e) for e in s.events]
    return out


async def run(svc, base):
    app = ENGINE
    out = {}
    s1 = await svc.create_session(
        app_name=app, user_id="u1", state={"k": 1, "app:a": "A", "user:u": "U1", "temp:t": 0}
    )
    out["created_generated_id"] = {"state": s1.state, "has_id": bool(s1.id)}
    s2 = await svc.create_session(app_name=app, user_id="u1", session_id="s-two", state={"x": 1})
    out["created_s2"] = dump_session(s2)
    s3 = await svc.create_session(app_name=app, user_id="u2", session_id="s-three")
    out["created_s3"] = dump_session(s3)

    call = types.Part(function_call=types.FunctionCall(id="fc1", name="lookup", args={"q_text": "x", "n": 2}))
    answer = types.Part(function_response=types.FunctionResponse(id="fc1", name="lookup", response={"found": [1, 2]}))
    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=5, candidates_token_count=7)
    events = [
        Event(id="e0", invocation_id="i1", author="user", timestamp=base + 1,
              content=types.Content(role="user", parts=[types.Part(text="hello")]),
              actions=EventActions(state_delta={"k": 2, "user:u": "U1b", "app:a": "A2", "temp:z": 9})),
        Event(id="e1", invocation_id="i1", author="agent", timestamp=base + 2, branch="root.agent",
              content=types.Content(role="model", parts=[call]), long_running_tool_ids={"fc1"},
              usage_metadata=usage),
        Event(id="e2", invocation_id="i1", author="agent", timestamp=base + 3,
              content=types.Content(role="user", parts=[answer]),
              actions=EventActions(escalate=True, transfer_to_agent="other", skip_summarization=True,
                                   state_delta={"tool_ran": True})),
        Event(id="e3", invocation_id="i2", author="agent", timestamp=base + 4,
              content=types.Content(role="model", parts=[types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x00\x01\xfe\xff"))])),
        Event(id="e4", invocation_id="i2", author="agent", timestamp=base + 5,
              error_code="SAFETY", error_message="blocked", custom_metadata={"mine": {"deep": [1, None]}}),
        Event(id="e5", invocation_id="i2", author="agent", timestamp=base + 6, partial=True,
              content=types.Content(role="model", parts=[types.Part(text="par")])),
        Event(id="e6", invocation_id="i2", author="agent", timestamp=base + 7, turn_complete=True,
              content=types.Content(role="model", parts=[types.Part(text="done")]),
              actions=EventActions(state_delta={"big": 2**60 + 1, "ratio": 0.1, "nested": {"a": [1, {"b": "c"}]}})),
    ]
    for e in events:
        await svc.append_event(s1, e)
    out["handle_after_appends"] = {"state": s1.state, "events": len(s1.events)}

    full = await svc.get_session(app_name=app, user_id="u1", session_id=s1.id)
    out["s1_full"] = {"state": full.state, "events": [dump_event(e) for e in full.events],
                      "last_update_time": round(full.last_update_time, 6)}
    recent = await svc.get_session(app_name=app, user_id="u1", session_id=s1.id,
                                   config=GetSessionConfig(num_recent_events=2))
    out["s1_recent2"] = [e.id for e in recent.events]
    after = await svc.get_session(app_name=app, user_id="u1", session_id=s1.id,
                                  config=GetSessionConfig(after_timestamp=base + 3))
    out["s1_after3"] = [e.id for e in after.events]
    none = await svc.get_session(app_name=app, user_id="u1", session_id=s1.id,
                                 config=GetSessionConfig(num_recent_events=0))
    out["s1_none"] = {"events": len(none.events), "state": none.state}

    out["s2_sees"] = (await svc.get_session(app_name=app, user_id="u1", session_id="s-two")).state
    out["s3_sees"] = (await svc.get_session(app_name=app, user_id="u2", session_id="s-three")).state

    # A long history: the Vertex client reads it page by page.
    for i in range(230):
        e = Event(id=f"h{i:03d}", invocation_id=f"h{i // 10}", author="agent", timestamp=base + 100 + i,
                  content=types.Content(role="model", parts=[types.Part(text=f"turn {i}")]),
                  actions=EventActions(state_delta={"n": i}))
        await svc.append_event(s2, e)
    long = await svc.get_session(app_name=app, user_id="u1", session_id="s-two")
    out["s2_long"] = {"ids": [e.id for e in long.events], "state": long.state}
    long_recent = await svc.get_session(app_name=app, user_id="u1", session_id="s-two",
                                        config=GetSessionConfig(num_recent_events=5))
    out["s2_recent5"] = [e.id for e in long_recent.events]
    long_after = await svc.get_session(app_name=app, user_id="u1", session_id="s-two",
                                       config=GetSessionConfig(after_timestamp=base + 100 + 198.0))
    out["s2_after198"] = [e.id for e in long_after.events]

    listed = await svc.list_sessions(app_name=app, user_id="u1")
    out["list_u1"] = sorted([{"id": s.id if s.id != s1.id else "<generated>", "user_id": s.user_id, "state": s.state}
                             for s in listed.sessions], key=lambda s: s["id"])
    listed_all = await svc.list_sessions(app_name=app)
    out["list_all"] = sorted((s.user_id, s.id if s.id != s1.id else "<generated>") for s in listed_all.sessions)

    out["missing"] = await svc.get_session(app_name=app, user_id="u1", session_id="nothing-here") is None
    await svc.delete_session(app_name=app, user_id="u2", session_id="s-three")
    out["deleted"] = await svc.get_session(app_name=app, user_id="u2", session_id="s-three") is None
    await svc.delete_session(app_name=app, user_id="u2", session_id="s-three")

    # 16 sessions of one user append at once, each writing a user: key of its own.
    many = [await svc.create_session(app_name=app, user_id="u3", session_id=f"c{i}") for i in range(16)]
    await asyncio.gather(*[
        svc.append_event(s, Event(id=f"c{i}-e", invocation_id="ci", author="agent", timestamp=base + 500 + i,
                                  actions=EventActions(state_delta={f"user:key_{i}": i})))
        for i, s in enumerate(many)
    ])
    out["concurrent_user_keys"] = {k: v for k, v in
                                   (await svc.get_session(app_name=app, user_id="u3", session_id="c0")).state.items()
                                   if k.startswith("user:")}
    return out


async def vertex_only(svc):
    """What only the managed-service surface does: refusals as Google errors."""
    from google.genai.errors import ClientError
    out = {}
    try:
        await svc.create_session(app_name=ENGINE, user_id="u1", session_id="s-two")
        out["duplicate"] = "created"
    except ClientError as e:
        out["duplicate"] = {"code": e.code, "status": e.status, "message": e.message}
    try:
        await svc.get_session(app_name=ENGINE, user_id="someone-else", session_id="s-two")
        out["other_user"] = "read"
    except ValueError as e:
        out["other_user"] = str(e)
    return out


async def main():
    base = round(time.time() + 10, 3)
    vertex = vertex_service()
    print(json.dumps({
        "vertex": await run(vertex, base),
        "memory": await run(InMemorySessionService(), base),
        "vertex_only": await vertex_only(vertex),
    }))


asyncio.run(main())
