"""The compacted view's route alone, binaries side by side: `GET …/sessions/{id}?view=compacted`
and the whole session, over HTTP, on sessions of `python/long_figures.py`'s history (4-event turns
of about 700 bytes an event, a summary of the last 11 invocations every 10).

usage: .venv-adk/bin/python bench/compacted_route.py BIN [BIN ...] [--events 1000,10000] [--runs 30]
       [--rounds 2] [--db sqlite|redis://127.0.0.1:6379|postgres://…] [--encrypted]

Each round starts each binary in turn (`agentstate serve` on a throwaway SQLite file, or the
store `--db` names: a Redis URL gets a fresh key prefix, a PostgreSQL or MySQL URL should name a
throwaway database; `--encrypted` with a throwaway key), writes the history through the server,
and times `--runs` GETs of each form over one connection. Prints the median of each, per binary
and round, so binaries measured in the same sitting can be compared.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "python" / "tests")]

import conftest  # noqa: E402
import long_figures  # noqa: E402


def store_url(db: str) -> str:
    """A throwaway store of the kind `db` names."""
    if db == "sqlite":
        return "sqlite://" + os.path.join(tempfile.mkdtemp(), "sessions.db")
    if db.startswith("redis"):
        return f"{db}{'&' if '?' in db else '?'}prefix=bench-{uuid.uuid4().hex}:"
    return db


def measure(binary: str, size: int, runs: int, db: str, encrypted: bool) -> tuple[float, int, float]:
    os.environ["AGENTSTATE_BIN"] = binary
    options = []
    if encrypted:
        keys = os.path.join(tempfile.mkdtemp(), "keys.txt")
        Path(keys).write_text("bench:" + base64.b64encode(os.urandom(32)).decode() + "\n")
        options = ["--encryption-keys-file", keys]
    server = conftest.Server(db=store_url(db), options=options)
    try:
        session_id = f"s{size}"
        long_figures.write(server.url, session_id, long_figures.history(size))
        path = f"/apps/{long_figures.APP}/users/{long_figures.USER}/sessions/{session_id}"
        with httpx.Client(base_url=server.url, timeout=120) as client:

            def median(params: dict) -> tuple[float, int]:
                times = []
                for _ in range(runs):
                    start = time.perf_counter()
                    answer = client.get(path, params=params)
                    times.append(time.perf_counter() - start)
                    answer.raise_for_status()
                return statistics.median(times) * 1000, len(answer.json()["events"])

            view, kept = median({"view": "compacted", "overlap": 1})
            whole, _ = median({})
            return view, kept, whole
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--events", default="1000,10000")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--db", default="sqlite")
    parser.add_argument("--encrypted", action="store_true")
    args = parser.parse_args()
    print("| round | binary | events | view | events answered | whole |")
    print("|---|---|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        for binary in args.binaries:
            for size in (int(s) for s in args.events.split(",")):
                view, kept, whole = measure(binary, size, args.runs, args.db, args.encrypted)
                print(f"| {round_} | {binary} | {size:,} | {view:.2f} ms | {kept} | {whole:.2f} ms |", flush=True)


if __name__ == "__main__":
    main()
