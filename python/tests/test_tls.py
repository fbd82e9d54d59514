"""A server serving TLS (`serve --tls-cert --tls-key`) with a certificate of a private CA: the
package trusts it through `ca_file` or `AGENTSTATE_CA_FILE`, and refuses it without."""

from __future__ import annotations

import asyncio

import pytest
import trustme
from conftest import Server

from agentstate_adk import AgentstateSessionService, AgentstateUnavailableError


@pytest.fixture
def tls(tmp_path):
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, ca_file = tmp_path / "server.pem", tmp_path / "server.key", tmp_path / "ca.pem"
    for blob in leaf.cert_chain_pems:
        with open(cert, "ab") as f:
            f.write(blob.bytes())
    leaf.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    server = Server(tokens=[{"token": "tls-token-0123456789", "apps": "*"}],
                    options=["--tls-cert", str(cert), "--tls-key", str(key)])
    yield server, str(ca_file)
    server.stop()


TOKEN = "tls-token-0123456789"


def test_a_ca_file_reaches_the_server(tls):
    server, ca_file = tls

    async def steps():
        service = AgentstateSessionService(f"https://{server.addr}", token=TOKEN, ca_file=ca_file)
        created = await service.create_session(app_name="a", user_id="u", state={"k": 1})
        loaded = await service.get_session(app_name="a", user_id="u", session_id=created.id)
        await service.close()
        return loaded

    loaded = asyncio.run(steps())
    assert loaded is not None and loaded.state == {"k": 1}


def test_the_ca_file_from_the_environment(tls, monkeypatch):
    server, ca_file = tls
    monkeypatch.setenv("AGENTSTATE_CA_FILE", ca_file)

    async def steps():
        service = AgentstateSessionService(f"agentstate+https://{server.addr}", token=TOKEN)
        listed = await service.list_sessions(app_name="a")
        await service.close()
        return listed

    assert asyncio.run(steps()).sessions == []


def test_without_the_ca_or_in_cleartext_nothing_is_answered(tls):
    server, _ = tls

    async def refused(url):
        service = AgentstateSessionService(url, token=TOKEN)
        try:
            with pytest.raises(AgentstateUnavailableError):
                await service.create_session(app_name="a", user_id="u")
        finally:
            await service.close()

    for url in (f"https://{server.addr}", f"http://{server.addr}"):
        asyncio.run(refused(url))
