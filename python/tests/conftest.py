"""Starts real `agentstate serve` processes (SQLite, a throwaway file, a free port) for the tests.

The binary comes from AGENTSTATE_BIN, else target/debug/agentstate of the repository (built by
`cargo build -p agentstate-server`, or by `cargo test`, which runs this suite)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def binary() -> str:
    path = os.environ.get("AGENTSTATE_BIN") or str(REPO / "target" / "debug" / "agentstate")
    if not Path(path).exists():
        raise RuntimeError(f"{path} is missing: build it with `cargo build -p agentstate-server` or set AGENTSTATE_BIN")
    return path


class Server:
    """`agentstate serve` on a throwaway SQLite file; stopped by `stop()`."""

    def __init__(
        self,
        tokens: list[dict] | None = None,
        options: list[str] | None = None,
        env: dict[str, str] | None = None,
        db: str | None = None,
    ) -> None:
        self.dir = tempfile.mkdtemp(prefix="agentstate-adk-")
        db = db or f"sqlite://{self.dir}/sessions.db"
        args = [binary(), "serve", "--db", db, "--addr", "127.0.0.1:0", *(options or [])]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTSTATE_", "OTEL_"))} | (env or {})
        env["RUST_LOG"] = "info"
        if tokens is not None:
            env["AGENTSTATE_TOKENS"] = json.dumps({"tokens": tokens})
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        found = threading.Event()
        self.addr = ""

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                if not found.is_set() and "addr=" in line:
                    self.addr = line.split("addr=", 1)[1].split()[0]
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(30):
            self.stop()
            raise RuntimeError("agentstate serve did not report its address in 30 s")
        self.url = f"http://{self.addr}"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.stop()


class Backend:
    """A throwaway store of the services `.ci/services` starts: a PostgreSQL database or a Redis
    key prefix of its own, dropped by `drop()`; SQLite is the server's default file."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = f"agentstate_test_{uuid.uuid4().hex}"
        if kind == "postgres":
            self._psql(f"CREATE DATABASE {self.name}")
            self.url: str | None = f"postgres://postgres@127.0.0.1:5432/{self.name}"
        elif kind == "redis":
            self.url = f"redis://127.0.0.1:6379/?prefix={self.name}:"
        else:
            self.url = None

    @staticmethod
    def _psql(statement: str) -> None:
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-qc", statement], check=True)

    def drop(self) -> None:
        if self.kind == "postgres":
            self._psql(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
        elif self.kind == "redis":
            keys = subprocess.run(
                ["redis-cli", "-h", "127.0.0.1", "--scan", "--pattern", f"{self.name}:*"],
                check=True, capture_output=True, text=True,
            ).stdout.split()
            for start in range(0, len(keys), 500):
                subprocess.run(["redis-cli", "-h", "127.0.0.1", "DEL", *keys[start:start + 500]], check=True, capture_output=True)


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def any_server(request):
    """`agentstate serve` on each backend in turn."""
    backend = Backend(request.param)
    s = Server(db=backend.url)
    yield s
    s.stop()
    backend.drop()
