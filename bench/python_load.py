"""What a whole-session load costs ADK for Python through `AgentstateSessionService`, against the
floor of the same bytes: the server's answer read by httpx, and ADK's own
`Session.model_validate_json` of those bytes (the least a load that ends in ADK's `Session` does).

usage: .venv-adk/bin/python bench/python_load.py [--events 2000] [--runs 15] [--bin target/release/agentstate]

Starts `agentstate serve` on a throwaway SQLite file, appends a conversation through the package
(user text, a function call, its response, model text; repeated), then times, taking turns, each of:
the GET alone (bytes), `Session.model_validate_json` of the bytes, and `get_session`. Prints medians
and each as a multiple of `model_validate_json`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.session import Session
from google.genai import types

# The package of this checkout (or, to compare, the one AGENTSTATE_ADK_SRC names).
sys.path.insert(0, os.environ.get("AGENTSTATE_ADK_SRC") or str(Path(__file__).resolve().parents[1] / "python" / "src"))
from agentstate_adk import AgentstateSessionService  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def conversation_event(i: int, invocation: str) -> Event:
    """The i-th event of a turn of four: user text, a call, its response, model text."""
    kind = i % 4
    if kind == 0:
        content = types.Content(role="user", parts=[types.Part(text=f"Find me a flight, request {i}, window seat please.")])
        return Event(invocation_id=invocation, author="user", content=content)
    if kind == 1:
        call = types.FunctionCall(id=f"call-{i}", name="search_flights", args={"from": "CDG", "to": "SFO", "day": i})
        return Event(invocation_id=invocation, author="travel", content=types.Content(role="model", parts=[types.Part(function_call=call)]))
    if kind == 2:
        answer = types.FunctionResponse(
            id=f"call-{i - 1}", name="search_flights", response={"flights": [{"number": f"AF{i}", "seat": "12A"}]}
        )
        return Event(invocation_id=invocation, author="travel", content=types.Content(role="user", parts=[types.Part(function_response=answer)]))
    text = f"I found flight AF{i - 1} with a window seat, 12A. Shall I book it? (turn {i // 4})"
    return Event(
        invocation_id=invocation,
        author="travel",
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta={"last_flight": f"AF{i - 1}"}),
    )


def start(binary: str) -> tuple[subprocess.Popen, str, str]:
    directory = tempfile.mkdtemp(prefix="agentstate-python-load-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTSTATE_", "OTEL_"))} | {"RUST_LOG": "info"}
    process = subprocess.Popen(
        [binary, "serve", "--db", f"sqlite://{directory}/sessions.db", "--addr", "127.0.0.1:0"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "addr=" in line:
            return process, f"http://{line.split('addr=', 1)[1].split()[0]}", directory
    raise RuntimeError("agentstate serve stopped before it listened")


async def measure(url: str, events: int, runs: int) -> dict[str, float]:
    service = AgentstateSessionService(url)
    session = await service.create_session(app_name="load", user_id="u")
    for i in range(events):
        if i % 500 == 0:
            print(f"appending: {i} of {events}", file=sys.stderr)
        await service.append_event(session, conversation_event(i, f"inv-{i // 4}"))
    path = f"/apps/load/users/u/sessions/{session.id}"
    http = service._http()  # the package's own client: the same connection pool
    body = (await http.get(path)).content
    print(f"a session of {events} events: {len(body) / 1e6:.2f} MB of JSON", file=sys.stderr)

    timings: dict[str, list[float]] = {"GET (bytes)": [], "Session.model_validate_json": [], "get_session": []}
    for _ in range(runs):
        # Each step starts from a collected heap, so no step pays for another's garbage.
        gc.collect()
        started = time.perf_counter()
        body = (await http.get(path)).content
        timings["GET (bytes)"].append(time.perf_counter() - started)
        gc.collect()
        started = time.perf_counter()
        Session.model_validate_json(body)
        timings["Session.model_validate_json"].append(time.perf_counter() - started)
        loaded = None
        gc.collect()
        started = time.perf_counter()
        loaded = await service.get_session(app_name="load", user_id="u", session_id=session.id)
        timings["get_session"].append(time.perf_counter() - started)
        assert loaded is not None and len(loaded.events) == events
    await service.close()
    return {name: statistics.median(values) for name, values in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--bin", default=str(REPO / "target" / "release" / "agentstate"))
    args = parser.parse_args()
    process, url, _ = start(args.bin)
    try:
        medians = asyncio.run(measure(url, args.events, args.runs))
    finally:
        process.kill()
    floor = medians["Session.model_validate_json"]
    print(f"\n{args.runs} runs; medians, and each / Session.model_validate_json of the same bytes\n")
    print("| step | median | / model_validate_json |\n|---|---|---|")
    for name, value in medians.items():
        print(f"| {name} | {value * 1e3:.1f} ms | {value / floor:.2f}× |")


if __name__ == "__main__":
    main()
