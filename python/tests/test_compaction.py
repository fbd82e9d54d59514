"""Compacted loads: ADK's `Runner` compacting its history (`EventsCompactionConfig`, both
triggers) over `AgentstateSessionService(compacted_loads=True)`, on SQLite, PostgreSQL and Redis,
sends a scripted model exactly the requests it sends over `InMemorySessionService`, including a long-running call that a summary
covers before the user answers it, while each turn loads a fraction of the history."""

from __future__ import annotations

import asyncio
import hashlib
import re

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.apps.app import EventsCompactionConfig
from google.adk.artifacts import InMemoryArtifactService
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import LongRunningFunctionTool, ToolContext
from google.genai import types

from agentstate_adk import AgentstateSessionService

pytestmark = pytest.mark.filterwarnings("ignore:.*EXPERIMENTAL")

#: ADK's call ids are random: a request names them by order of appearance instead.
CALL_ID = re.compile(r"adk-[0-9a-f-]{36}")


def _named_in_order(text: str) -> str:
    ids: dict[str, str] = {}
    return CALL_ID.sub(lambda m: ids.setdefault(m.group(0), f"call{len(ids)}"), text)


class Scripted(BaseLlm):
    """Answers from the request alone: a summary naming what it summarised, a long-running
    `ticket` call for "wait …", a `remember` call otherwise, and "done" after a response."""

    model: str = "scripted"
    requests: list[str] = []

    async def generate_content_async(self, llm_request, stream=False):
        contents = "\n".join(c.model_dump_json(exclude_none=True) for c in llm_request.contents)
        self.requests.append(_named_in_order(f"{llm_request.config.system_instruction}\n{contents}"))
        first = "".join(p.text or "" for p in llm_request.contents[0].parts or [])
        if first.startswith("The following is a conversation history"):
            digest = hashlib.sha256(_named_in_order(first).encode()).hexdigest()[:12]
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=f"summary {digest}")]))
            return
        last = llm_request.contents[-1]
        if any(p.function_response for p in last.parts or []):
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))
            return
        said = "".join(p.text or "" for p in last.parts or [])
        call = types.FunctionCall(name="ticket" if said.startswith("wait") else "remember", args={"what": said})
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def remember(what: str, tool_context: ToolContext) -> dict:
    """Remembers what the user said."""
    tool_context.state["turns"] = tool_context.state.get("turns", 0) + 1
    if "first" not in tool_context.state:  # written once: a summary covers it later
        tool_context.state["first"] = what
    return {"remembered": what}


def ticket(what: str) -> dict:
    """Opens a ticket a person resolves later."""
    return {"status": "pending"}


async def converse(service, config: dict, turns: int = 20) -> tuple[list[str], str]:
    """`turns` turns: the second opens a long-running ticket, the seventh answers it."""
    runner, model = runner_of(service, config)
    session = await service.create_session(app_name="compacting", user_id="u")
    pending = None
    for n in range(1, turns + 1):
        if n == 7:
            response = types.FunctionResponse(id=pending.id, name="ticket", response={"status": "resolved"})
            message = types.Content(role="user", parts=[types.Part(function_response=response)])
        else:
            message = types.Content(role="user", parts=[types.Part(text=f"{'wait' if n == 2 else 'hi'} {n}")])
        async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pending = next((c for c in event.get_function_calls() if c.name == "ticket"), pending)
    return model.requests, session.id


def runner_of(service, config: dict) -> tuple[Runner, Scripted]:
    model = Scripted(requests=[])
    agent = LlmAgent(
        name="helper",
        model=model,
        instruction="Help; turns so far {turns?}.",
        tools=[remember, LongRunningFunctionTool(func=ticket)],
    )
    app = App(name="compacting", root_agent=agent, events_compaction_config=EventsCompactionConfig(**config))
    return Runner(app=app, session_service=service), model


#: The triggers tried, as `EventsCompactionConfig` arguments (a config is made per run: ADK sets
#: its summarizer on first use, to the model of the agent that used it).
CONFIGS = {
    "every 2 invocations, overlap 0": {"compaction_interval": 2, "overlap_size": 0},
    "every 2 invocations, overlap 1": {"compaction_interval": 2, "overlap_size": 1},
    "every 3 invocations, overlap 2": {"compaction_interval": 3, "overlap_size": 2},
    "over 60 tokens, keeping 3 events": {"token_threshold": 60, "event_retention_size": 3},
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_model_is_sent_what_it_is_sent_over_the_whole_history(any_server, name):
    server = any_server
    config = CONFIGS[name]
    overlap = config.get("overlap_size", 1)
    expected, _ = asyncio.run(converse(InMemorySessionService(), config))
    service = AgentstateSessionService(server.url, compacted_loads=True, compaction_overlap=overlap)
    got, session_id = asyncio.run(converse(service, config))
    assert len(got) == len(expected)
    for turn, (want, have) in enumerate(zip(expected, got)):
        assert have == want, f"request {turn} differs"
    assert any("summary " in r for r in got), "the history was compacted"

    whole = httpx.get(f"{server.url}/apps/compacting/users/u/sessions/{session_id}").json()["events"]
    params = {"view": "compacted", "overlap": overlap}
    view = httpx.get(f"{server.url}/apps/compacting/users/u/sessions/{session_id}", params=params).json()["events"]
    assert len(view) < len(whole) / 2, f"{len(view)} of {len(whole)} events"
    assert [e["id"] for e in view] == [e["id"] for e in whole if e in view], "in storage order"


def test_rewinds_restore_what_the_whole_history_says(any_server):
    server = any_server
    """ADK's rewind replays the state deltas of the loaded session: over a compacted load, a key
    last written in covered events ("first") would come out deleted. The package computes the
    rewind's delta over the whole history instead."""

    async def rewind(service) -> dict:
        config = CONFIGS["every 2 invocations, overlap 1"]
        _, session_id = await converse(service, config, turns=10)
        whole = await service.get_session(app_name="compacting", user_id="u", session_id=session_id)
        runner, _ = runner_of(service, config)
        target = whole.events[-1].invocation_id
        await runner.rewind_async(user_id="u", session_id=session_id, rewind_before_invocation_id=target)
        return (await service.get_session(app_name="compacting", user_id="u", session_id=session_id)).state

    expected = asyncio.run(rewind(InMemorySessionService()))
    assert expected["first"] == "hi 1" and expected["turns"] == 8
    assert asyncio.run(rewind(AgentstateSessionService(server.url, compacted_loads=True))) == expected


def test_rewinds_restore_artifacts_a_summary_covers(server):
    """ADK's rewind finds the artifact versions to restore by replaying the artifact deltas of the
    session it loads: the view keeps the events that saved artifacts, so a version saved in
    events a summary covers is restored as over the whole history (not replaced by a tombstone)."""

    async def rewind(service, whole) -> list:
        artifacts = InMemoryArtifactService()

        async def remember(what: str, tool_context: ToolContext) -> dict:
            """Remembers what the user said."""
            if what in ("hi 1", "hi 2", "hi 10"):
                await tool_context.save_artifact("notes.txt", types.Part(text=what))
            return {"remembered": what}

        agent = LlmAgent(name="helper", model=Scripted(requests=[]), instruction="Help.", tools=[remember])
        config = EventsCompactionConfig(**CONFIGS["every 2 invocations, overlap 1"])
        app = App(name="compacting", root_agent=agent, events_compaction_config=config)
        runner = Runner(app=app, session_service=service, artifact_service=artifacts)
        session = await service.create_session(app_name="compacting", user_id="u")
        for n in range(1, 11):
            message = types.Content(role="user", parts=[types.Part(text=f"hi {n}")])
            async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
                pass
        events = (await whole.get_session(app_name="compacting", user_id="u", session_id=session.id)).events
        target = next(e.invocation_id for e in events if e.content and e.content.parts[0].text == "hi 10")
        await runner.rewind_async(user_id="u", session_id=session.id, rewind_before_invocation_id=target)
        keys = dict(app_name="compacting", user_id="u", session_id=session.id, filename="notes.txt")
        versions = await artifacts.list_versions(**keys)
        return [(await artifacts.load_artifact(**keys, version=v)).text for v in versions]

    memory = InMemorySessionService()
    expected = asyncio.run(rewind(memory, memory))
    assert expected == ["hi 1", "hi 2", "hi 10", "hi 2"], expected
    compacted = AgentstateSessionService(server.url, compacted_loads=True)
    assert asyncio.run(rewind(compacted, AgentstateSessionService(server.url))) == expected


def test_the_options_come_in_the_registrys_uri_too(server):
    """`adk web --session_service_uri 'agentstate://host:port?compacted_loads=true'`."""
    _, session_id = asyncio.run(converse(AgentstateSessionService(server.url), CONFIGS["every 2 invocations, overlap 1"], 8))
    uri = server.url.replace("http://", "agentstate://")

    def loaded(service: AgentstateSessionService) -> int:
        session = asyncio.run(service.get_session(app_name="compacting", user_id="u", session_id=session_id))
        return len(session.events)

    whole = loaded(AgentstateSessionService(uri=uri))
    compacted = loaded(AgentstateSessionService(uri=f"{uri}?compacted_loads=true&compaction_overlap=1"))
    assert compacted < whole
    assert loaded(AgentstateSessionService(uri=f"{uri}?compacted_loads=true", compacted_loads=False)) == whole
    for bad in ("?compacted=true", "?compacted_loads=yes", "?compaction_overlap=-1"):
        with pytest.raises(ValueError):
            AgentstateSessionService(uri=uri + bad)


def test_whole_loads_stay_the_default(server):
    plain = AgentstateSessionService(server.url)
    config = CONFIGS["every 2 invocations, overlap 1"]
    _, session_id = asyncio.run(converse(plain, config, turns=6))
    session = asyncio.run(plain.get_session(app_name="compacting", user_id="u", session_id=session_id))
    assert any(e.actions.compaction for e in session.events)
    assert len(session.events) == len(
        httpx.get(f"{server.url}/apps/compacting/users/u/sessions/{session_id}").json()["events"]
    )


def test_bad_views_and_bad_ranges_are_refused(server):
    for bad in ({"compaction_overlap": -1}, {"compaction_overlap": "1"}, {"compacted_loads": "yes"}):
        with pytest.raises((ValueError, TypeError)):
            AgentstateSessionService(server.url, **bad)
    sessions = f"{server.url}/apps/a/users/u/sessions"
    session = httpx.post(sessions, json={}).json()
    url = f"{sessions}/{session['id']}"
    for params in ({"view": "sideways"}, {"overlap": 2}, {"view": "compacted", "overlap": -1}):
        answer = httpx.get(url, params=params)
        assert answer.status_code == 400, (params, answer.text)
    for compaction in (
        {"startTimestamp": 2.0, "endTimestamp": 1.0, "compactedContent": {"parts": []}},
        {"startTimestamp": "today", "endTimestamp": 1.0, "compactedContent": {"parts": []}},
    ):
        event = {"author": "helper", "invocationId": "i", "actions": {"compaction": compaction, "stateDelta": {"k": 1}}}
        answer = httpx.post(f"{url}/events", json={"event": event})
        assert answer.status_code == 400, answer.text
        assert "compaction" in answer.text
    after = httpx.get(url).json()
    assert after["events"] == [] and after["state"] == {}


def _vertex_client(url: str):
    """ADK's own Agent Engine client (`VertexAiSessionService`) pointed at agentstate's `/v1beta1`."""
    from google.adk.sessions import VertexAiSessionService

    class Local(VertexAiSessionService):
        def _api_client_http_options_override(self):
            return types.HttpOptions(base_url=f"{url}/v1beta1/", base_url_resource_scope="COLLECTION")

    return Local(agent_engine_id="4004")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_adks_agent_engine_client_is_sent_the_same_requests(server, name):
    """ADK's Agent Engine client reads event times to the microsecond, while a summary's range
    keeps the times its events had in memory, finer than that: agentstate's `/v1beta1` answers
    each bound as the time it carries for the event at that bound, so a summary covers on reload
    exactly the events it covered when it was written."""
    config = CONFIGS[name]
    expected, _ = asyncio.run(converse(InMemorySessionService(), config))
    got, _ = asyncio.run(converse(_vertex_client(server.url), config))
    assert any("summary " in r for r in got), "the history was compacted"
    assert len(got) == len(expected)
    for turn, (want, have) in enumerate(zip(expected, got)):
        assert have == want, f"request {turn} differs"
