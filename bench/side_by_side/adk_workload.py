"""ADK for Python's half of the side-by-side service workload: the same operations, sizes and
event as `side_by_side services` (bench/src/bin/side_by_side/) against google-adk 2.13.0's
InMemorySessionService, DatabaseSessionService (SQLite and PostgreSQL) and RedisSessionService.
Writes the same JSON shape; prints progress on stderr.

usage: adk_workload.py --sizes 10,100,1000 --stores memory,sqlite,postgres,redis --out FILE
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from google.genai import types

WRITERS = 8
CREATES = 50
POSTGRES = os.environ.get("AGENTSTATE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("AGENTSTATE_TEST_REDIS", "redis://127.0.0.1:6379/0")


def make_event(i: int) -> Event:
    """The workload's i-th event, as `agentstate_bench::make_event` builds it."""
    role = "user" if i % 2 == 0 else "model"
    return Event(
        invocation_id=f"inv-{i // 10}",
        author="user" if i % 2 == 0 else "bench_agent",
        content=types.Content(role=role, parts=[types.Part(text=f"message number {i} of the bench")]),
        actions=EventActions(state_delta={"step": i, "last_text": f"text {i}", "user:turns": i}),
    )


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def timed(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


async def measure(store: str, service, sizes: list[int], per_writer: int, shortcut=None) -> dict:
    """The workload on one service. `shortcut(session, size)`, when given, writes a session of
    `size` events straight into the store's own layout (for a store whose appends grow with the
    history) and returns it reloaded."""
    creates = []
    for i in range(CREATES):
        t = time.perf_counter()
        await service.create_session(app_name="bench_app", user_id=f"creator{i % 5}")
        creates.append(time.perf_counter() - t)
    session = await service.create_session(app_name="bench_app", user_id="bench_user")
    key = dict(app_name="bench_app", user_id="bench_user", session_id=session.id)
    rows = []
    grown = 0
    for size in sizes:
        if shortcut is not None and size > 1000:
            session = await shortcut(session, size)
            grown = size
            appends = []
            for _ in range(5):
                t = time.perf_counter()
                await service.append_event(session, make_event(len(session.events)))
                appends.append(time.perf_counter() - t)
            append = statistics.median(appends)
        else:
            appends = []
            while grown < size:
                t = time.perf_counter()
                await service.append_event(session, make_event(grown))
                appends.append(time.perf_counter() - t)
                grown += 1
            window = min(len(appends), max(10, size // 10))
            append = statistics.median(appends[-window:])
        samples = 5 if size >= 10_000 else 20
        recent = await timed(lambda: service.get_session(**key, config=GetSessionConfig(num_recent_events=20)), samples)
        full = await timed(lambda: service.get_session(**key), samples)
        row = {"events": size, "append_us": append * 1e6, "recent20_us": recent * 1e6, "full_us": full * 1e6}
        log(f"  adk-python {store} at {size:>6} events: append {row['append_us']:>9.1f} µs, "
            f"recent 20 {row['recent20_us']:>9.1f} µs, all {row['full_us']:>11.1f} µs")
        rows.append(row)

    failures = 0

    async def writer(w: int) -> int:
        nonlocal failures
        s = await service.create_session(app_name="bench_app", user_id=f"writer{w}")
        done = 0
        for i in range(per_writer):
            try:
                await service.append_event(s, make_event(i))
                done += 1
            except Exception:  # the reference refuses some concurrent appends; count them
                failures += 1
                s = await service.get_session(app_name="bench_app", user_id=f"writer{w}", session_id=s.id)
        return done

    start = time.perf_counter()
    done = sum(await asyncio.gather(*(writer(w) for w in range(WRITERS))))
    rate = done / (time.perf_counter() - start)
    log(f"  adk-python {store}: {WRITERS} writers on {WRITERS} users, {rate:.0f} appends/s, {failures} refused")
    return {
        "implementation": "adk-python",
        "store": store,
        "create_us": statistics.median(creates) * 1e6,
        "sizes": rows,
        "concurrent_appends_per_s": rate,
        "concurrent_failures": failures,
    }


async def postgres_database() -> tuple[str, str]:
    import asyncpg

    name = f"agentstate_test_{uuid.uuid4().hex}"
    conn = await asyncpg.connect(POSTGRES)
    await conn.execute(f"CREATE DATABASE {name}")
    await conn.close()
    server = POSTGRES.rsplit("/", 1)[0]
    return name, f"{server.replace('postgres://', 'postgresql+asyncpg://', 1)}/{name}"


async def drop_postgres(name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(POSTGRES)
    await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    await conn.close()


async def close(service) -> None:
    """Closes a DatabaseSessionService's connections, so its database can be dropped."""
    await service.close()


async def run_store(store: str, sizes: list[int], per_writer: int, tmp: str) -> dict:
    log(f"adk-python, {store}")
    if store == "memory":
        return await measure(store, InMemorySessionService(), sizes, per_writer)
    if store == "sqlite":
        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp}/adk.db")
        try:
            return await measure(store, service, sizes, per_writer)
        finally:
            await close(service)
    if store == "postgres":
        name, url = await postgres_database()
        service = DatabaseSessionService(db_url=url)
        try:
            return await measure(store, service, sizes, per_writer)
        finally:
            await close(service)
            await drop_postgres(name)
    if store == "redis":
        from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig

        prefix = f"agentstate-side-by-side-{uuid.uuid4().hex}:"
        service = RedisSessionService(RedisSessionServiceConfig(uri=REDIS, key_prefix=prefix, ttl_seconds=0))
        client = service._get_redis()

        async def shortcut(session: Session, size: int) -> Session:
            # The reference stores a session as one JSON value and rewrites it on every append
            # (O(n²) to grow): write it directly, with the service's own models.
            events = [make_event(i) for i in range(size)]
            stored = Session(id=session.id, app_name="bench_app", user_id="bench_user", state={}, events=events,
                             last_update_time=time.time())
            await client.set(service._session_key("bench_app", "bench_user", session.id), stored.model_dump_json())
            return await service.get_session(app_name="bench_app", user_id="bench_user", session_id=session.id)

        try:
            return await measure(store, service, sizes, per_writer, shortcut)
        finally:
            cursor = 0
            while True:
                cursor, keys = await client.scan(cursor, match=f"{prefix}*", count=1000)
                if keys:
                    await client.unlink(*keys)
                if cursor == 0:
                    break
    raise SystemExit(f"unknown store {store!r}; the stores are memory, sqlite, postgres, redis")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,10000")
    parser.add_argument("--stores", default="memory,sqlite,postgres,redis")
    parser.add_argument("--per-writer", type=int, default=200)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="adk-side-by-side-") as tmp:
        for store in args.stores.split(","):
            results.append(await run_store(store, sizes, args.per_writer, tmp))
    with open(args.out, "w") as f:
        json.dump({"results": results}, f, indent=2)


asyncio.run(main())
