"""The reference's own `adk api_server`, told `--session_service_uri agentstate://…`,
`--memory_service_uri agentstate://…` and `--artifact_service_uri agentstate://…` with the
services.yaml a user adds: its sessions, runs, memories and artifacts are kept by agentstate."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from agentstate_adk import AgentstateArtifactService, AgentstateMemoryService, AgentstateSessionService

AGENTS = Path(__file__).parent / "agents"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_adk_api_server_keeps_its_sessions_in_agentstate(server):
    port = free_port()
    adk = Path(sys.executable).with_name("adk")
    process = subprocess.Popen(
        [str(adk), "api_server", "--host", "127.0.0.1", "--port", str(port), "--no-reload",
         "--session_service_uri", f"agentstate://{server.addr}",
         "--memory_service_uri", f"agentstate://{server.addr}",
         "--artifact_service_uri", f"agentstate://{server.addr}", str(AGENTS)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while True:
            try:
                httpx.get(f"{base}/list-apps", timeout=1)
                break
            except httpx.TransportError:
                assert time.time() < deadline, "adk api_server did not start in 60 s"
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
                time.sleep(0.3)
        created = httpx.post(f"{base}/apps/helper/users/u/sessions", json={"sessionId": "s", "state": {"topic": "dogs"}})
        assert created.status_code == 200, created.text
        run = httpx.post(
            f"{base}/run",
            json={"appName": "helper", "userId": "u", "sessionId": "s",
                  "newMessage": {"role": "user", "parts": [{"text": "name Bo"}]}},
            timeout=30,
        )
        assert run.status_code == 200, run.text
        # What adk api_server did is in agentstate.
        stored = asyncio.run(AgentstateSessionService(server.url).get_session(app_name="helper", user_id="u", session_id="s"))
        assert stored is not None
        assert stored.state["user:name"] == "name Bo" and stored.state["topic"] == "dogs"
        assert [e.author for e in stored.events] == ["user", "helper", "helper", "helper"]
        # Its memory route adds the session to agentstate's memory, as its own services would.
        added = httpx.patch(f"{base}/apps/helper/users/u/memory", json={"sessionId": "s"}, timeout=30)
        assert (added.status_code, added.json()) == (200, None), added.text
        missing = httpx.patch(f"{base}/apps/helper/users/u/memory", json={"sessionId": "nope"}, timeout=30)
        assert (missing.status_code, missing.json()) == (404, {"detail": "Session not found"})
        memory = AgentstateMemoryService(server.url)
        found = asyncio.run(memory.search_memory(app_name="helper", user_id="u", query="name bo"))
        found_ids = [m.id for m in found.memories]
        assert stored.events[0].id in found_ids, "the user's words"
        assert set(found_ids) <= {e.id for e in stored.events}
        # Its artifact routes keep artifacts in agentstate.
        saved = httpx.post(f"{base}/apps/helper/users/u/sessions/s/artifacts",
                           json={"filename": "user:card.txt", "artifact": {"text": "Bo"}}, timeout=30)
        assert (saved.status_code, saved.json()["version"]) == (200, 0), saved.text
        artifacts = AgentstateArtifactService(server.url)
        card = asyncio.run(artifacts.load_artifact(app_name="helper", user_id="u", filename="user:card.txt"))
        assert card is not None and card.text == "Bo"
    finally:
        process.kill()
        process.wait()
