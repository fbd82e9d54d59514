"""A Runner turn of ADK for Python on AgentstateSessionService (an `agentstate serve` on SQLite)
next to the same turn on the reference's DatabaseSessionService (SQLite) and, as the floor, its
InMemorySessionService (the Runner's own work), in the same run; and 16 Runners at once on one
user's sessions, each writing its own `user:` key.

    cargo build --release -p agentstate-server
    .venv-adk/bin/python python/bench.py [TURNS]

Each turn: the scripted model calls a tool that writes `user:` and session state, then answers
(4 events: the user's message, the call, the tool's answer, the answer saved by output_key), on a
session of its own that already holds 20 events (made before the timing). Medians of TURNS turns
(default 200), the services interleaved.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "tests"))

from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import DatabaseSessionService, InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

import conftest  # noqa: E402
from agentstate_adk import AgentstateSessionService  # noqa: E402
from scripted import agent  # noqa: E402
from test_runner import sixteen_writers  # noqa: E402


async def prepare(svc, sid: str) -> None:
    runner = Runner(app_name="bench", agent=agent(), session_service=svc)
    await svc.create_session(app_name="bench", user_id="u", session_id=sid, state={"topic": "speed"})
    for i in range(5):  # 5 turns of 4 events: 20 events of history
        message = types.Content(role="user", parts=[types.Part(text=f"w{i} warm up")])
        async for _ in runner.run_async(user_id="u", session_id=sid, new_message=message):
            pass


async def turn(runner: Runner, sid: str, i: int) -> float:
    message = types.Content(role="user", parts=[types.Part(text=f"k{i % 7} turn {i}")])
    start = time.perf_counter()
    async for _ in runner.run_async(user_id="u", session_id=sid, new_message=message):
        pass
    return time.perf_counter() - start


async def main(turns: int) -> None:
    logging.disable(logging.WARNING)  # the reference warns on every turn of a model without token counts
    conftest.REPO = Path(__file__).resolve().parents[1]
    release = conftest.REPO / "target" / "release" / "agentstate"
    if release.exists():
        import os

        os.environ.setdefault("AGENTSTATE_BIN", str(release))
    server = conftest.Server()
    directory = tempfile.mkdtemp(prefix="agentstate-adk-bench-")
    services = {
        "InMemorySessionService (floor)": InMemorySessionService(),
        "AgentstateSessionService (agentstate serve, SQLite)": AgentstateSessionService(server.url),
        "DatabaseSessionService (SQLite)": DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{directory}/ref.db"),
    }
    try:
        runners = {name: Runner(app_name="bench", agent=agent(), session_service=svc) for name, svc in services.items()}
        samples: dict[str, list[float]] = {name: [] for name in services}
        for i in range(turns):
            for name, runner in runners.items():
                await prepare(services[name], f"s{i}")
                samples[name].append(await turn(runner, f"s{i}", i))
        floor = statistics.median(samples["InMemorySessionService (floor)"])
        print(f"\n| session service | a Runner turn (median of {turns}) | ratio to the floor |")
        print("|---|---|---|")
        for name, values in samples.items():
            median = statistics.median(values)
            print(f"| {name} | {median * 1e3:.2f} ms | {median / floor:.2f}× |")
        ours = await sixteen_writers(AgentstateSessionService(server.url))
        theirs = await sixteen_writers(DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{directory}/sixteen.db"))
        print(f"\n16 Runners at once, each writing its own user: key: agentstate keeps {ours['kept']} of 16 "
              f"({len(ours['errors'])} errors); DatabaseSessionService keeps {theirs['kept']} of 16 "
              f"({len(theirs['errors'])} errors)")
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
