"""ADK for Python's RedisSessionService (google-adk 2.13.0) on the workload of
`cargo bench -p agentstate-bench --bench redis`, on the same Redis: appends and loads at 10, 100,
1,000 and 10,000 events, and 8 writers on 8 users. Prints a Markdown table.

The sessions are grown by the service itself up to 1,000 events; the 10,000-event one is written
in the service's own layout (one JSON value) by the same pydantic models, since growing it append
by append costs O(n²) (each append rewrites the whole history).

usage: redis_reference.py REDIS_URL KEY_PREFIX
"""

import asyncio
import statistics
import sys
import time

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from google.genai import types


def make_event(i: int) -> Event:
    role = "user" if i % 2 == 0 else "model"
    return Event(
        invocation_id=f"inv-{i // 10}",
        author="user" if i % 2 == 0 else "bench_agent",
        content=types.Content(role=role, parts=[types.Part(text=f"message number {i} of the bench")]),
        actions=EventActions(state_delta={"step": i, "last_text": f"text {i}", "user:turns": i}),
    )


async def timed(fn, n):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


async def main(url: str, prefix: str) -> None:
    service = RedisSessionService(RedisSessionServiceConfig(uri=url, key_prefix=prefix, ttl_seconds=0))
    client = service._get_redis()
    rows = []
    session = await service.create_session(app_name="bench_app", user_id="bench_user")
    grown = 0
    for size in [10, 100, 1000, 10000]:
        if size <= 1000:
            latencies = []
            start = time.perf_counter()
            while grown < size:
                t = time.perf_counter()
                await service.append_event(session, make_event(grown))
                latencies.append(time.perf_counter() - t)
                grown += 1
            window = latencies[-max(10, (size + 9) // 10):]
            append = statistics.median(window)
        else:
            events = [make_event(i) for i in range(size)]
            stored = Session(id=session.id, app_name="bench_app", user_id="bench_user", state={}, events=events,
                             last_update_time=time.time())
            await client.set(service._session_key("bench_app", "bench_user", session.id), stored.model_dump_json())
            session = await service.get_session(app_name="bench_app", user_id="bench_user", session_id=session.id)
            grown = size

            async def one_append():
                global_i = len(session.events)
                await service.append_event(session, make_event(global_i))

            append = await timed(one_append, 5)
        key = dict(app_name="bench_app", user_id="bench_user", session_id=session.id)
        recent = await timed(lambda: service.get_session(**key, config=GetSessionConfig(num_recent_events=20)), 20 if size < 10000 else 5)
        full = await timed(lambda: service.get_session(**key), 20 if size < 10000 else 5)
        rows.append((size, append, recent, full))

    async def writer(w):
        s = await service.create_session(app_name="bench_app", user_id=f"writer{w}")
        for i in range(100):
            await service.append_event(s, make_event(i))

    start = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(8)))
    concurrent = 800 / (time.perf_counter() - start)

    print("| events | append (µs) | get 20 most recent (µs) | get all (ms) |")
    print("|---|---|---|---|")
    for size, append, recent, full in rows:
        print(f"| {size} | {append * 1e6:.0f} | {recent * 1e6:.0f} | {full * 1e3:.2f} |")
    print(f"| 8 writers, 8 users (100 appends each), appends/s | {concurrent:.0f} | | |")


asyncio.run(main(sys.argv[1], sys.argv[2]))
