"""Long conversations: ADK for Python's `get_session` and a whole `Runner` turn on sessions of
100 to 50,000 events that the app compacts (`EventsCompactionConfig(compaction_interval=10,
overlap_size=1)`), over ADK's own `DatabaseSessionService` (SQLite), our package loading the whole
history, and our package with `compacted_loads=True` — the three on the same SQLite file, served
by one `agentstate serve` (release build), in the same run.

    cargo build --release -p agentstate-server
    .venv-adk/bin/python python/long_figures.py [SIZES]      # default 100,1000,10000,50000

A fourth service is our package as it parsed before it built sessions without validating them
again (`Session.model_validate_json` of the answer, the collector on), and a second table puts a
whole load beside `Session.model_validate_json` of the same bytes. A fifth is the floor of a
compacted turn: ADK's own `InMemorySessionService` holding only the events the compacted view
answers (no store, no network, no parsing: what ADK's `Runner` itself costs over that history).

Each session is turns of 4 events (the user's text, the model's function call, the tool's
response, the model's text, the model's events with the usage metadata, version and finish reason
Gemini sends; about 700 bytes of JSON each, as in a real conversation) and, every
10 invocations, a summary of the last 11 as ADK's interval trigger writes it, appended through the
server before the timing (a tenth of a millisecond apart, so that they all lie between the
session's creation and the turns). `get_session`: the median of 5 loads. A turn: the median of 3 turns of
a scripted model (a tool call and an answer, 4 events), each on the session left by the one before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent / "tests"))

from google.adk.events.event import Event  # noqa: E402
from google.adk.sessions import DatabaseSessionService, InMemorySessionService  # noqa: E402
from google.adk.sessions.session import Session  # noqa: E402
from google.genai import types  # noqa: E402

import conftest  # noqa: E402
from agentstate_adk import AgentstateSessionService  # noqa: E402
from test_compaction import runner_of  # noqa: E402

APP, USER = "compacting", "u"
FLOOR = "ADK InMemorySessionService, the view's events (floor)"
CONFIG = {"compaction_interval": 10, "overlap_size": 1}
FILLER = "and a little more about the trip, the dates, the hotel and the budget " * 4
#: What a Gemini model's event carries besides its content, as ADK stores it.
MODEL = {"modelVersion": "gemini-2.5-flash", "finishReason": "STOP", "avgLogprobs": -0.12,
         "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 40, "totalTokenCount": 1240,
                           "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1200}],
                           "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 40}]}}


def history(size: int) -> list[dict]:
    """`size` events in ADK's JSON: 4-event turns, a summary of the last 11 invocations every 10.
    Their times start now, a tenth of a millisecond apart: after the session's creation (as
    appends must be) and, once written, before the turns timed."""
    t0 = time.time() + 0.5
    events: list[dict] = []
    firsts: dict[int, float] = {}
    invocation = 0

    def add(event: dict) -> float:
        t = t0 + len(events) * 1e-4
        events.append({**event, "timestamp": t})
        return t

    while len(events) < size:
        invocation += 1
        inv, call_id = f"inv-{invocation}", f"call-{invocation}"
        firsts[invocation] = add({"author": "user", "invocationId": inv,
                                  "content": {"role": "user", "parts": [{"text": f"question {invocation} {FILLER}"}]}})
        add({**MODEL, "author": "helper", "invocationId": inv, "content": {"role": "model", "parts": [
            {"functionCall": {"id": call_id, "name": "remember", "args": {"what": f"question {invocation}"}},
             "thoughtSignature": "c2lnbmF0dXJlIG9mIHRoZSBtb2RlbCdzIHRob3VnaHQ="}]}})
        add({"author": "helper", "invocationId": inv, "content": {"role": "user", "parts": [
            {"functionResponse": {"id": call_id, "name": "remember", "response": {"remembered": FILLER}}}]}})
        last = add({**MODEL, "author": "helper", "invocationId": inv,
                    "content": {"role": "model", "parts": [{"text": f"answer {invocation} {FILLER}"}]}})
        if invocation % 10 == 0:
            compaction = {"startTimestamp": firsts[max(1, invocation - 10)], "endTimestamp": last,
                          "compactedContent": {"role": "model", "parts": [{"text": "summary " + FILLER}]}}
            add({"author": "user", "invocationId": f"summary-{invocation}", "actions": {"compaction": compaction}})
    return events[:size]


class ValidatingService(AgentstateSessionService):
    """The package's whole load as it was: the answer validated by ADK's model."""

    async def get_session(self, *, app_name, user_id, session_id, config=None):
        path = f"{self._sessions(app_name, user_id)}/{session_id}"
        response = await self._request("GET", path)
        response.raise_for_status()
        return Session.model_validate_json(response.content)


def write(url: str, session_id: str, events: list[dict]) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        client.post(f"/apps/{APP}/users/{USER}/sessions", json={"sessionId": session_id}).raise_for_status()
        for event in events:
            client.post(f"/apps/{APP}/users/{USER}/sessions/{session_id}/events", json={"event": event}).raise_for_status()


async def in_memory_view(url: str, session_id: str) -> InMemorySessionService:
    """ADK's in-memory service holding the events the compacted view of `session_id` answers."""
    service = InMemorySessionService()
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        answer = await client.get(f"/apps/{APP}/users/{USER}/sessions/{session_id}",
                                  params={"view": "compacted", "overlap": CONFIG["overlap_size"]})
    answer.raise_for_status()
    session = await service.create_session(app_name=APP, user_id=USER, session_id=session_id)
    for event in answer.json()["events"]:
        await service.append_event(session, Event.model_validate(event))
    return service


async def loads(service, session_id: str) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(5):
        start = time.perf_counter()
        session = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
        times.append(time.perf_counter() - start)
        count = len(session.events)
    return statistics.median(times) * 1000, count


async def turns(service, session_id: str) -> float:
    runner, _ = runner_of(service, CONFIG)
    times = []
    for i in range(3):
        message = types.Content(role="user", parts=[types.Part(text=f"hi {i}")])
        start = time.perf_counter()
        async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=message):
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def main(sizes: list[int]) -> None:
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    release = Path(__file__).resolve().parents[1] / "target" / "release" / "agentstate"
    os.environ.setdefault("AGENTSTATE_BIN", str(release))
    server = conftest.Server()
    try:
        database = f"sqlite+aiosqlite:///{server.dir}/sessions.db"
        services = {
            "ADK DatabaseSessionService": DatabaseSessionService(db_url=database),
            "agentstate, whole, validated (before)": ValidatingService(server.url),
            "agentstate, whole": AgentstateSessionService(server.url),
            "agentstate, compacted": AgentstateSessionService(server.url, compacted_loads=True, compaction_overlap=1),
            FLOOR: None,
        }
        parses = []
        print("| events | service | get_session | events loaded | Runner turn |")
        print("|---|---|---|---|---|")
        for size in sizes:
            started = time.perf_counter()
            for n in range(len(services)):
                write(server.url, f"s{n}-{size}", history(size))
            print(f"<!-- {size} events written {len(services)} times in {time.perf_counter() - started:.0f} s -->",
                  file=sys.stderr)
            services[FLOOR] = await in_memory_view(server.url, f"s{len(services) - 1}-{size}")
            for n, (name, service) in enumerate(services.items()):
                session_id = f"s{n}-{size}"
                load, count = await loads(service, session_id)
                turn = await turns(service, session_id)
                print(f"| {size:,} | {name} | {load:,.1f} ms | {count:,} | {turn:,.1f} ms |", flush=True)
            parses.append(await parse(server.url, f"s2-{size}", services["agentstate, whole"]))
        print("\n| events | answer | `Session.model_validate_json` | the package's whole load | ratio |")
        print("|---|---|---|---|---|")
        for size, (length, validate, load) in zip(sizes, parses):
            print(f"| {size:,} | {length / 1e6:.1f} MB | {validate:,.1f} ms | {load:,.1f} ms | {load / validate:.2f}× |")
    finally:
        server.stop()


async def parse(url: str, session_id: str, service) -> tuple[int, float, float]:
    """The answer's size, `Session.model_validate_json` of it and the package's whole load of it
    (HTTP included), medians of 5, alternating."""
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        body = (await client.get(f"/apps/{APP}/users/{USER}/sessions/{session_id}")).content
    validate, load = [], []
    for _ in range(5):
        start = time.perf_counter()
        Session.model_validate_json(body)
        validate.append(time.perf_counter() - start)
        start = time.perf_counter()
        await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
        load.append(time.perf_counter() - start)
    return len(body), statistics.median(validate) * 1000, statistics.median(load) * 1000


if __name__ == "__main__":
    arg = sys.argv[1] if len(sys.argv) > 1 else "100,1000,10000,50000"
    asyncio.run(main([int(s) for s in arg.split(",")]))
