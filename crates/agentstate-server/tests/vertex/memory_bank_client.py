"""Drives Memory Bank through ADK for Python's own VertexAiMemoryBankService and the
google-cloud-agentplatform client it uses, pointed at an agentstate server, and prints what they
returned (JSON, last line) for the Rust test to check. Usage: memory_bank_client.py BASE_URL ENGINE TOKEN
MEANING_ENGINE (an engine whose memories the server searches by meaning, with embeddings)

Also reads the same memories through agentstate's own AgentstateMemoryService (the ADK-form
scope {app_name: ENGINE, user_id} is that app's user).
"""
import asyncio
import json
import sys
import warnings

warnings.filterwarnings("ignore")

import google.oauth2.credentials  # noqa: E402
from google.adk.dependencies._agentplatform import agentplatform  # noqa: E402
from google.adk.memory import VertexAiMemoryBankService  # noqa: E402
from google.adk.memory.memory_entry import MemoryEntry  # noqa: E402
from google.genai import types  # noqa: E402

from agentstate_adk import AgentstateMemoryService  # noqa: E402

BASE_URL, ENGINE, TOKEN, MEANING = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


def client():
    return agentplatform.Client(
        project="my-project",
        location="us-central1",
        credentials=google.oauth2.credentials.Credentials(token=TOKEN),
        http_options=types.HttpOptions(base_url=BASE_URL),
    )


class Local(VertexAiMemoryBankService):
    def _build_api_client(self):
        return client().aio


def entry(text, **kwargs):
    return MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=text)]), **kwargs)


def error_of(e):
    return {"code": getattr(e, "code", None), "status": getattr(e, "status", None), "message": getattr(e, "message", str(e))}


async def main():
    out = {}
    bank = Local(project="my-project", location="us-central1", agent_engine_id=ENGINE)
    sdk = client()  # kept: its async client closes with it
    memories = sdk.aio.memory_banks.memories
    engine_name = f"projects/my-project/locations/us-central1/reasoningEngines/{ENGINE}"

    # ADK's add_memory: memories.create, one per entry (an id of the caller's, metadata).
    await bank.add_memory(
        app_name=ENGINE,
        user_id="alice",
        memories=[
            entry("Alice prefers window seats on long flights", id="seat-pref"),
            entry("Alice is allergic to peanuts", custom_metadata={"source": "chat", "confidence": 0.9}),
        ],
    )
    await bank.add_memory(app_name=ENGINE, user_id="bob", memories=[entry("Bob prefers aisle seats")])
    # ADK's add_memory with consolidation: memories.generate from direct memories.
    await bank.add_memory(
        app_name=ENGINE,
        user_id="alice",
        memories=[entry("Alice flies to Lisbon every spring")],
        custom_metadata={"enable_consolidation": True},
    )
    # (consolidated by the engine's model in the background: ADK does not wait for it)
    for _ in range(100):
        listed = await memories.retrieve(
            name=f"projects/my-project/locations/us-central1/reasoningEngines/{ENGINE}",
            scope={"app_name": ENGINE, "user_id": "alice"},
            simple_retrieval_params={"page_size": 10},
        )
        if "Alice flies to Lisbon every spring" in [r.memory.fact async for r in listed]:
            break
        await asyncio.sleep(0.1)

    # ADK's search_memory: memories.retrieve by similarity, scoped exactly.
    found = await bank.search_memory(app_name=ENGINE, user_id="alice", query="which seats does she prefer")
    out["search_alice"] = [
        {"text": m.content.parts[0].text, "author": m.author, "has_time": bool(m.timestamp), "meta": m.custom_metadata}
        for m in found.memories
    ]
    found = await bank.search_memory(app_name=ENGINE, user_id="bob", query="peanuts seats")
    out["search_bob"] = [m.content.parts[0].text for m in found.memories]
    found = await bank.search_memory(app_name=ENGINE, user_id="alice", query="peanuts")
    out["search_peanuts"] = [(m.content.parts[0].text, m.custom_metadata) for m in found.memories]

    # The client's own calls: get, patch, list, simple retrieval, delete.
    got = await memories.get(name=f"{engine_name}/memories/seat-pref")
    out["get"] = {"name": got.name, "fact": got.fact, "scope": got.scope, "has_times": bool(got.create_time and got.update_time)}
    # (the client has no public update in 2.6: its request method, as a caller of the API sends it)
    op = await memories._update(
        name=f"{engine_name}/memories/seat-pref",
        fact="Alice prefers aisle seats now",
        scope={"app_name": ENGINE, "user_id": "alice"},
        config={"update_mask": "fact"},
    )
    out["patched"] = {"done": op.done, "fact": (await memories.get(name=f"{engine_name}/memories/seat-pref")).fact}
    # Revisions: one a write, newest first; a rollback sets the fact back (a revision too).
    seat = f"{engine_name}/memories/seat-pref"
    revisions = [r async for r in await memories.revisions.list(name=seat)]
    out["revisions"] = [(r.name.rsplit("/", 1)[1], r.fact, bool(r.create_time)) for r in revisions]
    first = await memories.revisions.get(name=revisions[-1].name)
    out["first_revision"] = first.fact
    rolled = await memories.rollback(name=seat, target_revision_id="1", config={"wait_for_completion": True})
    out["rolled_back"] = {"done": rolled.done, "fact": (await memories.get(name=seat)).fact}
    revisions = [r async for r in await memories.revisions.list(name=seat, config={"page_size": 1})]
    out["revisions_after_rollback"] = [r.name.rsplit("/", 1)[1] for r in revisions]
    await memories._update(
        name=seat,
        fact="Alice prefers aisle seats now",
        scope={"app_name": ENGINE, "user_id": "alice"},
        config={"update_mask": "fact", "revision_ttl": "3600s"},
    )
    newest = [r async for r in await memories.revisions.list(name=seat, config={"page_size": 1})][0]
    out["revision_ttl"] = newest.expire_time is not None and (newest.expire_time - newest.create_time).total_seconds()
    labelled = await memories.generate(
        name=engine_name,
        direct_memories_source={"direct_memories": [{"fact": "Erin keeps a diary"}]},
        scope={"app_name": ENGINE, "user_id": "erin"},
        config={"revision_labels": {"why": "she said so"}, "wait_for_completion": True},
    )
    labelled = labelled.response.generated_memories[0].memory.name
    matching = [r async for r in await memories.revisions.list(name=labelled, config={"filter": 'labels.why="she said so"'})]
    other = [r async for r in await memories.revisions.list(name=labelled, config={"filter": 'labels.why="no"'})]
    out["labelled"] = [(r.fact, r.labels) for r in matching] + [r.fact for r in other]
    await memories.delete(name=labelled)
    # Distances of a similarity search, and profiles (none: no structured memory schemas here).
    nearest = await memories.retrieve(
        name=engine_name,
        scope={"app_name": ENGINE, "user_id": "alice"},
        similarity_search_params={"search_query": "peanuts allergic", "top_k": 2},
    )
    out["distances"] = [(r.memory.fact, r.distance) async for r in nearest]
    profiles = await memories.retrieve_profiles(name=engine_name, scope={"app_name": ENGINE, "user_id": "alice"})
    out["profiles"] = profiles.profiles or {}
    out["adk_profiles"] = [p.model_dump() for p in await bank.retrieve_profiles(app_name=ENGINE, user_id="alice")]
    listed = [m async for m in await memories.list(name=engine_name, config={"page_size": 2})]
    out["listed"] = sorted(m.fact for m in listed)
    simple = await memories.retrieve(
        name=engine_name,
        scope={"app_name": ENGINE, "user_id": "alice"},
        simple_retrieval_params={"page_size": 10},
    )
    out["simple_alice"] = sorted([r.memory.fact async for r in simple])
    other_scope = await memories.create(
        name=engine_name, fact="Carol likes jazz", scope={"user_id": "carol"}, config={"wait_for_completion": True}
    )
    out["other_scope"] = other_scope.response.scope
    exact = await memories.retrieve(
        name=engine_name, scope={"user_id": "alice"}, similarity_search_params={"search_query": "seats"}
    )
    out["exact_scope"] = [r.memory.fact async for r in exact]
    ttl = await memories.create(
        name=engine_name,
        fact="Alice is in Lisbon this week",
        scope={"app_name": ENGINE, "user_id": "alice"},
        config={"ttl": "3600s", "wait_for_completion": True},
    )
    out["ttl_has_expiry"] = ttl.response.expire_time is not None
    deleted = await memories.delete(name=f"{engine_name}/memories/seat-pref")
    out["deleted_done"] = deleted.done
    try:
        await memories.get(name=f"{engine_name}/memories/seat-pref")
        out["deleted_get"] = "found"
    except Exception as e:  # noqa: BLE001
        out["deleted_get"] = error_of(e)

    # Bad input, as Google answers it.
    bad = {}
    for label, kwargs in {
        "empty_fact": {"fact": "", "scope": {"user_id": "alice"}},
        "no_scope": {"fact": "x y", "scope": {}},
        "long_fact": {"fact": "word " * 5000, "scope": {"user_id": "alice"}},
    }.items():
        try:
            await memories.create(name=engine_name, config={"wait_for_completion": False}, **kwargs)
            bad[label] = "stored"
        except Exception as e:  # noqa: BLE001
            bad[label] = error_of(e)
    # A model answer that is not the JSON asked for: the operation fails (the client raises).
    try:
        await memories.generate(
            name=engine_name,
            direct_contents_source={"events": [{"content": {"role": "user", "parts": [{"text": "break it"}]}}]},
            scope={"user_id": "alice"},
            config={"wait_for_completion": True},
        )
        bad["generate_malformed"] = "accepted"
    except Exception as e:  # noqa: BLE001
        bad["generate_malformed"] = str(e)
    out["bad"] = bad

    # Memories the server's model generates (a mock of the extraction contract): ADK's
    # add_session_to_memory ingests in the background (poll until the fact is there); its
    # add_events_to_memory with generate-only options (ttl, and waiting) polls the operation.
    from google.adk.events import Event
    from google.adk.sessions import Session

    said = Event(author="user", invocation_id="i1", content=types.Content(role="user", parts=[types.Part(text="I live in Lisbon")]))
    session = Session(id="s1", app_name=ENGINE, user_id="dora", events=[said])
    await bank.add_session_to_memory(session)
    out["ingested"] = []
    for _ in range(100):
        found = await bank.search_memory(app_name=ENGINE, user_id="dora", query="Lisbon")
        out["ingested"] = [m.content.parts[0].text for m in found.memories]
        if out["ingested"]:
            break
        await asyncio.sleep(0.1)
    allergy = Event(author="user", invocation_id="i2", content=types.Content(role="user", parts=[types.Part(text="peanuts make me ill")]))
    await bank.add_events_to_memory(app_name=ENGINE, user_id="dora", events=[allergy], custom_metadata={"ttl": "3600s", "wait_for_completion": True})
    found = await bank.search_memory(app_name=ENGINE, user_id="dora", query="allergic peanuts")
    out["generated"] = [m.content.parts[0].text for m in found.memories]

    # ADK's Runner with load_memory: a fact the model extracted from one session, recalled in
    # the next.
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import load_memory

    class Recaller(BaseLlm):
        model: str = "recaller"

        async def generate_content_async(self, llm_request, stream=False):
            last = llm_request.contents[-1]
            responses = [p.function_response for p in last.parts or [] if p.function_response]
            if responses:
                found = responses[0].response["result"].memories
                recalled = " | ".join(p.text for m in found for p in m.content.parts if p.text)
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=f"I recall: {recalled}")]))
            elif any(p.text and p.text.startswith("remember") for p in last.parts or []):
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]))
            else:
                query = "".join(p.text or "" for p in last.parts or [])
                call = types.FunctionCall(name="load_memory", args={"query": query})
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))

    sessions = InMemorySessionService()
    agent = LlmAgent(name="recaller", model=Recaller(), tools=[load_memory])
    runner = Runner(app_name=ENGINE, agent=agent, session_service=sessions, memory_service=bank)

    async def turn(session_id, text):
        message = types.Content(role="user", parts=[types.Part(text=text)])
        answers = []
        async for event in runner.run_async(user_id="erin", session_id=session_id, new_message=message):
            answers += [p.text for p in (event.content.parts if event.content else []) if p.text]
        return answers

    first = await sessions.create_session(app_name=ENGINE, user_id="erin")
    await turn(first.id, "remember: I live in Lisbon")
    await bank.add_session_to_memory(await sessions.get_session(app_name=ENGINE, user_id="erin", session_id=first.id))
    for _ in range(100):
        if (await bank.search_memory(app_name=ENGINE, user_id="erin", query="Lisbon")).memories:
            break
        await asyncio.sleep(0.1)
    second = await sessions.create_session(app_name=ENGINE, user_id="erin")
    out["recalled"] = await turn(second.id, "Lisbon?")

    # agentstate's own memory service reads the same memories of the app's user.
    own = AgentstateMemoryService(BASE_URL, token=TOKEN)
    found = await own.search_memory(app_name=ENGINE, user_id="alice", query="Lisbon spring")
    out["own_search"] = sorted(m.content.parts[0].text for m in found.memories)

    # By meaning: an engine with embeddings; ADK's search_memory and the client's retrieve.
    meaning = Local(project="my-project", location="us-central1", agent_engine_id=MEANING)
    facts = ["Alice is allergic to peanuts", "Alice prefers aisle seats", "Alice flies to Porto"]
    await meaning.add_memory(app_name=MEANING, user_id="alice", memories=[entry(f) for f in facts])
    found = await meaning.search_memory(app_name=MEANING, user_id="alice", query="nut allergy")
    meaning_name = f"projects/my-project/locations/us-central1/reasoningEngines/{MEANING}"
    scope = {"app_name": MEANING, "user_id": "alice"}
    words_alone = await memories.retrieve(
        name=engine_name, scope={"app_name": ENGINE, "user_id": "alice"}, similarity_search_params={"search_query": "nut allergy"}
    )
    nearest = await memories.retrieve(name=meaning_name, scope=scope, similarity_search_params={"search_query": "nut allergy"})
    out["by_meaning"] = {
        "found": [m.content.parts[0].text for m in found.memories],
        "by_words_alone": [r.memory.fact async for r in words_alone],
        "distances": [(r.memory.fact, r.distance) async for r in nearest],
    }
    print(json.dumps(out, default=str))


asyncio.run(main())
