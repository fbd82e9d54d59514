"""AgentstateMemoryService against the reference's InMemoryMemoryService (the oracle of what is
found), and in the reference's Runner with `load_memory`: an agent recalls, in a new session, what
the user said in an earlier one, stored by agentstate."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools import load_memory
from google.genai import types

from agentstate_adk import AgentstateMemoryService, AgentstateSessionService
from agentstate_adk import AgentstateError

# The conformance case's texts (crates/agentstate-conformance/src/cases/memory.rs): the same
# words, so ADK's matching is compared with ours on what every backend is tested with. Change both.
TEXTS = [
    "私はPythonを使う",
    "I write Rust and Python every day",
    "The café on Straße 5 opens at 9",
    "hello_there, general Kenobi",
    "日本語の勉強をしています",
    "Rust is fast; rust never sleeps",
    "Tea or coffee? Green tea, please.",
    "١٢٣abc naïve日本",
]
QUERIES = ["python", "thon", "Rust", "使う", "私", "はp", "日本", "café", "cafe", "straße", "hello_there", "hello",
           "١٢", "NAÏVE", "tea coffee please", "zzz", "!!"]


def said(text: str, author: str = "user") -> Event:
    role = "user" if author == "user" else "model"
    return Event(invocation_id="inv", author=author, content=types.Content(role=role, parts=[types.Part(text=text)]))


async def both_services_hold(app: str, user: str, server_url: str):
    sessions = AgentstateSessionService(server_url)
    session = await sessions.create_session(app_name=app, user_id=user)
    for i, text in enumerate(TEXTS):
        await sessions.append_event(session, said(text, "user" if i % 2 == 0 else "agent"))
    oracle, ours = InMemoryMemoryService(), AgentstateMemoryService(server_url)
    for memory in (oracle, ours):
        await memory.add_session_to_memory(session)
        await memory.add_session_to_memory(session)
    return session, oracle, ours


def texts(response) -> list[str]:
    return sorted(" ".join(p.text for p in m.content.parts if p.text) for m in response.memories)


def test_what_is_found_is_what_adks_in_memory_service_finds(server):
    async def run():
        app = f"memory-{uuid.uuid4()}"
        session, oracle, ours = await both_services_hold(app, "alice", server.url)
        for query in QUERIES:
            expected = await oracle.search_memory(app_name=app, user_id="alice", query=query)
            found = await ours.search_memory(app_name=app, user_id="alice", query=query)
            assert texts(found) == texts(expected), query
        found = await ours.search_memory(app_name=app, user_id="alice", query="使う")
        (memory,) = found.memories
        first = session.events[0]
        assert memory.id == first.id and memory.author == "user"
        assert memory.content == first.content
        assert memory.timestamp and memory.timestamp[:10].count("-") == 2, "ISO 8601"
        nobody = await ours.search_memory(app_name=app, user_id="bob", query="python")
        assert nobody.memories == []

    asyncio.run(run())


def test_events_deltas_direct_memories_and_deletion_follow_adk(server):
    async def run():
        app = f"memory-{uuid.uuid4()}"
        oracle, ours = InMemoryMemoryService(), AgentstateMemoryService(server.url)
        first, second = said("the meeting is on Tuesday"), said("noted: Tuesday", "agent")
        for memory in (oracle, ours):
            await memory.add_events_to_memory(app_name=app, user_id="u", events=[first], session_id="s1")
            await memory.add_events_to_memory(app_name=app, user_id="u", events=[first, second], session_id="s1")
            await memory.add_events_to_memory(app_name=app, user_id="u", events=[first])
            await memory.delete_memory(app_name=app, user_id="u", memory_id=second.id)
            await memory.add_events_to_memory(app_name=app, user_id="u", events=[second], session_id="s2")
            await memory.delete_memory(app_name=app, user_id="u", memory_id="no-such-id")
            await memory.delete_memory(app_name=app, user_id="u")
        for query in ["tuesday", "meeting noted"]:
            expected = await oracle.search_memory(app_name=app, user_id="u", query=query)
            found = await ours.search_memory(app_name=app, user_id="u", query=query)
            assert texts(found) == texts(expected) == ["the meeting is on Tuesday"] * 2, query

        # add_memory (the in-memory service has none): written directly, found, listed, erased.
        fact = MemoryEntry(id="fact-1", content=types.Content(parts=[types.Part(text="allergic to peanuts")]),
                           custom_metadata={"source": "intake"}, author="nurse", timestamp="2026-11-01T09:30:00Z")
        await ours.add_memory(app_name=app, user_id="u", memories=[fact], custom_metadata={"ttl": "3600s"})
        (found,) = (await ours.search_memory(app_name=app, user_id="u", query="peanuts")).memories
        assert (found.id, found.author, found.timestamp) == ("fact-1", "nurse", "2026-11-01T09:30:00Z")
        assert found.custom_metadata == {"ttl": "3600s", "source": "intake"}
        assert len(await ours.list_memories(app_name=app, user_id="u")) == 3
        assert await ours.delete_user_memories(app_name=app, user_id="u") == 3
        assert (await ours.search_memory(app_name=app, user_id="u", query="peanuts")).memories == []
        with pytest.raises(AgentstateError):
            empty = MemoryEntry(content=types.Content(parts=[types.Part(text="  ")]))
            await ours.add_memory(app_name=app, user_id="u", memories=[empty])

    asyncio.run(run())


class Recaller(BaseLlm):
    """Calls `load_memory` with the user's words, then answers with what it found."""

    model: str = "recaller"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1]
        responses = [p.function_response for p in last.parts or [] if p.function_response]
        if responses:
            # load_memory answers ADK's LoadMemoryResponse, under "result".
            found = responses[0].response["result"].memories
            recalled = " | ".join(p.text for m in found for p in m.content.parts if p.text)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=f"I recall: {recalled}")]))
        elif any(p.text and p.text.startswith("remember") for p in last.parts or []):
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]))
        else:
            query = "".join(p.text or "" for p in last.parts or [])
            call = types.FunctionCall(name="load_memory", args={"query": query})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def test_an_agent_recalls_an_earlier_session_through_load_memory(server):
    async def run():
        app = f"recall-{uuid.uuid4()}"
        sessions, memory = AgentstateSessionService(server.url), AgentstateMemoryService(server.url)
        agent = LlmAgent(name="recaller", model=Recaller(), instruction="Help the user.", tools=[load_memory])
        runner = Runner(app_name=app, agent=agent, session_service=sessions, memory_service=memory)

        async def say(session_id: str, text: str) -> list[Event]:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            return [e async for e in runner.run_async(user_id="alice", session_id=session_id, new_message=message)]

        first = await sessions.create_session(app_name=app, user_id="alice")
        await say(first.id, "remember: my favourite colour is teal")
        done = await sessions.get_session(app_name=app, user_id="alice", session_id=first.id)
        await memory.add_session_to_memory(done)

        second = await sessions.create_session(app_name=app, user_id="alice")
        events = await say(second.id, "what is my favourite colour?")
        answer = events[-1].content.parts[0].text
        assert answer.startswith("I recall:") and "teal" in answer, answer

    asyncio.run(run())
