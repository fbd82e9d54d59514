"""ADK for Python 2.13's artifact services on the payloads `artifact_figures` measures: the median
`save_artifact` and `load_artifact` of each size, on `FileArtifactService` (a directory) and
`InMemoryArtifactService`, next to the same floor (the bytes written to a new file, flushed, read
back) measured in the same run.

    .venv-adk/bin/python bench/artifact_reference.py [SIZE ...]   # default 1000 1000000 50000000

ARTIFACT_ROUNDS=N times N saves and loads per size (fewer for large ones: at most 256 MiB written
per size and service, as in artifact_figures), after one unmeasured save and load, as `artifact_figures` does.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from google.adk.artifacts import FileArtifactService, InMemoryArtifactService
from google.genai import types


def rounds_for(size: int, rounds: int) -> int:
    return max(3, min(rounds, (256 << 20) // max(size, 1)))


def shown(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3f} ms" if ms < 10 else f"{ms:.0f} ms"


def human(size: int) -> str:
    if size >= 1_000_000:
        return f"{size // 1_000_000} MB"
    if size >= 1_000:
        return f"{size // 1_000} KB"
    return f"{size} B"


def floor(directory: Path, data: bytes, rounds: int) -> tuple[float, float]:
    writes, reads = [], []
    for i in range(rounds + 1):
        path = directory / f"floor-{i}"
        started = time.perf_counter()
        with open(path, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        wrote = time.perf_counter() - started
        started = time.perf_counter()
        back = path.read_bytes()
        read = time.perf_counter() - started
        assert len(back) == len(data)
        if i > 0:
            writes.append(wrote)
            reads.append(read)
    return statistics.median(writes), statistics.median(reads)


async def measure(service, data: bytes, rounds: int) -> tuple[float, float]:
    part = types.Part.from_bytes(data=data, mime_type="application/octet-stream")
    saves, loads = [], []
    for i in range(rounds + 1):
        where = dict(app_name="bench", user_id="u", session_id=f"s{i}", filename="blob.bin")
        started = time.perf_counter()
        await service.save_artifact(artifact=part, **where)
        saved = time.perf_counter() - started
        started = time.perf_counter()
        loaded = await service.load_artifact(**where)
        load = time.perf_counter() - started
        assert loaded is not None and loaded.inline_data.data == data
        if i > 0:
            saves.append(saved)
            loads.append(load)
    return statistics.median(saves), statistics.median(loads)


async def main() -> None:
    sizes = [int(s) for s in sys.argv[1:]] or [1_000, 1_000_000, 50_000_000]
    rounds = int(os.environ.get("ARTIFACT_ROUNDS", "30"))
    print("| store | size | save p50 | load p50 | save / floor | load / floor |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        data = random.Random(size).randbytes(size)
        n = rounds_for(size, rounds)
        with tempfile.TemporaryDirectory() as tmp:
            write, read = floor(Path(tmp), data, n)
        print(f"| floor: a file written, flushed, read | {human(size)} | {shown(write)} | {shown(read)} | 1 | 1 |")
        with tempfile.TemporaryDirectory() as tmp:
            services = [("ADK FileArtifactService", FileArtifactService(root_dir=tmp)), ("ADK InMemoryArtifactService", InMemoryArtifactService())]
            for name, service in services:
                save, load = await measure(service, data, n)
                print(f"| {name} | {human(size)} | {shown(save)} | {shown(load)} | {save / write:.1f} | {load / read:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
