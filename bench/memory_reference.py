"""ADK for Python 2.13's memory services on the corpus `memory_figures --export DIR` wrote: ingest
and 200 two-word searches of user u0 (p50, p99), with and without the app's other users.

    .venv-adk/bin/python bench/memory_reference.py DIR 10000 [100000 …]

MEMORY_QUERIES=N times only the first N queries (the in-memory service reads every memory of the
user on every search: at 100,000 memories a search takes about a second). MEMORY_SERVICES=
SqliteMemoryService runs only that one; MEMORY_SPREAD_UP_TO=N measures "with the app's other users"
only up to N memories of the user.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory._sqlite_memory_service import SqliteMemoryService
from google.genai import types


def sessions(path: Path) -> dict[tuple[str, str], list[Event]]:
    by_session: dict[tuple[str, str], list[Event]] = defaultdict(list)
    with path.open() as lines:
        for line in lines:
            row = json.loads(line)
            content = types.Content(role="user", parts=[types.Part(text=row["text"])])
            event = Event(id=row["id"], invocation_id="inv", author=row["author"], timestamp=row["timestamp"], content=content)
            by_session[(row["user"], row["session"])].append(event)
    return by_session


async def ingest(service, corpus, spread_users: int = 0) -> float:
    started = time.perf_counter()
    keys = list(corpus)
    per_user = max(1, -(-len(keys) // spread_users)) if spread_users else 0
    for i, (user, session) in enumerate(keys):
        owner = f"other{i // per_user}" if spread_users else user
        await service.add_events_to_memory(app_name="bench", user_id=owner, events=corpus[(user, session)], session_id=session)
    return time.perf_counter() - started


async def searches(service, queries) -> tuple[float, float]:
    times = []
    for query in queries:
        started = time.perf_counter()
        await service.search_memory(app_name="bench", user_id="u0", query=query)
        times.append(time.perf_counter() - started)
    times.sort()
    return times[round((len(times) - 1) * 0.5)], times[round((len(times) - 1) * 0.99)]


async def main() -> None:
    directory = Path(sys.argv[1])
    queries = [json.loads(line) for line in (directory / "queries.jsonl").open()]
    queries = queries[: int(os.environ.get("MEMORY_QUERIES", len(queries)))]
    print("| memories of the user | spread | service | ingest | memories/s | search p50 | search p99 |")
    print("|---|---|---|---|---|---|---|")
    for count in [int(n) for n in sys.argv[2:]]:
        mine = sessions(directory / f"memories-{count}.jsonl")
        others = sessions(directory / f"others-{count}.jsonl")
        spread_up_to = int(os.environ.get("MEMORY_SPREAD_UP_TO", count))
        names = os.environ.get("MEMORY_SERVICES", "InMemoryMemoryService,SqliteMemoryService").split(",")
        for spread in (False, True) if count <= spread_up_to else (False,):
            for name in names:
                with tempfile.TemporaryDirectory() as tmp:
                    service = InMemoryMemoryService() if name == "InMemoryMemoryService" else SqliteMemoryService(f"{tmp}/memory.db")
                    if spread:
                        await ingest(service, others, spread_users=1000)
                    took = await ingest(service, mine)
                    p50, p99 = await searches(service, queries)
                    if hasattr(service, "close"):
                        await service.close()
                label = "+ as many over 1,000 other users" if spread else "one user"
                print(f"| {count} | {label} | {name} | {took:.1f} s | {count / took:.0f} | {p50 * 1000:.2f} ms | {p99 * 1000:.2f} ms |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
