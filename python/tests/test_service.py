"""AgentstateSessionService against a real server: the BaseSessionService contract, windows,
pagination, and every error a caller can meet."""

from __future__ import annotations

import asyncio
import socket
import threading
from decimal import Decimal

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from google.genai import types

from agentstate_adk import (
    AgentstateArtifactService,
    AgentstateAuthError,
    AgentstateError,
    AgentstateMemoryService,
    AgentstateSessionService,
    AgentstateUnavailableError,
)
from conftest import Server


def run(coroutine):
    return asyncio.run(coroutine)


def event(invocation: str, delta: dict, text: str = "") -> Event:
    content = types.Content(role="model", parts=[types.Part(text=text)]) if text else None
    return Event(invocation_id=invocation, author="agent", content=content, actions=EventActions(state_delta=delta))


def test_event_times_come_back_bit_for_bit(server):
    """`time.time()` floats are finer than a microsecond: the server keeps them exactly, a handle
    appends after each of them without a stale conflict, and a reload answers the same floats
    (and the session's update time to the microsecond, as the reference's database does)."""
    svc = AgentstateSessionService(server.url)

    async def steps():
        s = await svc.create_session(app_name="times", user_id="u")
        base = s.last_update_time + 10
        sent = [base + 0.1234567, base + 1.9999996, base + 2.5000004]
        for i, t in enumerate(sent):
            e = event(f"i{i}", {"n": i})
            e.timestamp = t
            await svc.append_event(s, e)
        got = await svc.get_session(app_name="times", user_id="u", session_id=s.id)
        assert [e.timestamp for e in got.events] == sent
        assert [e.timestamp.hex() for e in got.events] == [t.hex() for t in sent]
        # The microsecond nearest the last time, computed exactly (a float product would round).
        assert got.last_update_time == s.last_update_time == round(Decimal(sent[-1]) * 10**6) / 1e6
        after = await svc.get_session(
            app_name="times", user_id="u", session_id=s.id, config=GetSessionConfig(after_timestamp=sent[1])
        )
        assert [e.timestamp for e in after.events] == sent[1:]
        await svc.close()

    run(steps())


def test_sessions_round_trip_with_scoped_state(server):
    svc = AgentstateSessionService(server.url)

    async def steps():
        s = await svc.create_session(
            app_name="app", user_id="u", session_id="s1", state={"k": 1, "user:u": "U", "app:a": "A", "temp:t": 0}
        )
        assert (s.id, s.app_name, s.user_id) == ("s1", "app", "u")
        assert s.state == {"k": 1, "user:u": "U", "app:a": "A"}
        await svc.append_event(s, event("i1", {"k": 2, "temp:x": 1, "user:v": 1}, "hello"))
        assert s.state["temp:x"] == 1, "temp: keys live on the handle, as the reference keeps them"
        got = await svc.get_session(app_name="app", user_id="u", session_id="s1")
        assert got.state == {"k": 2, "user:u": "U", "app:a": "A", "user:v": 1}
        assert [e.content.parts[0].text for e in got.events] == ["hello"]
        assert got.events[0].actions.state_delta == {"k": 2, "user:v": 1}
        assert got.last_update_time == s.last_update_time
        other = await svc.create_session(app_name="app", user_id="u")
        assert other.state == {"user:u": "U", "app:a": "A", "user:v": 1}
        with pytest.raises(AlreadyExistsError):
            await svc.create_session(app_name="app", user_id="u", session_id="s1")
        assert await svc.get_session(app_name="app", user_id="u", session_id="nope") is None
        await svc.delete_session(app_name="app", user_id="u", session_id="s1")
        assert await svc.get_session(app_name="app", user_id="u", session_id="s1") is None
        await svc.delete_session(app_name="app", user_id="u", session_id="s1")  # missing: no error
        await svc.close()

    run(steps())


def test_windows_are_answered_by_the_server(server):
    svc = AgentstateSessionService(server.url)

    async def steps():
        s = await svc.create_session(app_name="app", user_id="u", session_id="w")
        for i in range(30):
            await svc.append_event(s, event(f"i{i}", {"n": i}, f"t{i}"))
        recent = await svc.get_session(app_name="app", user_id="u", session_id="w", config=GetSessionConfig(num_recent_events=3))
        assert [e.content.parts[0].text for e in recent.events] == ["t27", "t28", "t29"]
        cut = s.events[25].timestamp
        after = await svc.get_session(app_name="app", user_id="u", session_id="w", config=GetSessionConfig(after_timestamp=cut))
        assert [e.content.parts[0].text for e in after.events] == ["t25", "t26", "t27", "t28", "t29"]
        none = await svc.get_session(app_name="app", user_id="u", session_id="w", config=GetSessionConfig(num_recent_events=0))
        assert none.events == [] and none.state == {"n": 29}

    run(steps())


def test_lists_follow_the_pages_for_one_user_and_for_all(server):
    svc = AgentstateSessionService(server.url)

    async def steps():
        for i in range(130):
            await svc.create_session(app_name="app", user_id="u1", session_id=f"a{i:03}")
        for i in range(5):
            await svc.create_session(app_name="app", user_id="u2", session_id=f"b{i}")
        mine = await svc.list_sessions(app_name="app", user_id="u1")
        assert [s.id for s in mine.sessions] == [f"a{i:03}" for i in range(130)], "oldest update first, every page"
        assert all(s.events == [] for s in mine.sessions)
        everyone = await svc.list_sessions(app_name="app")
        assert len(everyone.sessions) == 135
        assert (await svc.list_sessions(app_name="other")).sessions == []
        # agentstate's extensions: newest first, a limit, an offset, chosen by the server.
        latest = await svc.list_sessions(app_name="app", user_id="u1", newest_first=True, limit=3)
        assert [s.id for s in latest.sessions] == ["a129", "a128", "a127"]
        skipped = await svc.list_sessions(app_name="app", user_id="u1", newest_first=True, limit=2, offset=128)
        assert [s.id for s in skipped.sessions] == ["a001", "a000"]
        newest = await svc.list_sessions(app_name="app", newest_first=True)
        assert [s.id for s in newest.sessions][:6] == ["b4", "b3", "b2", "b1", "b0", "a129"]
        assert len(newest.sessions) == 135, "every page, newest first"
        with pytest.raises(ValueError):
            await svc.list_sessions(app_name="app", limit=0)

    run(steps())


def test_a_stale_handle_is_refused_and_nothing_is_written(server):
    svc = AgentstateSessionService(server.url)

    async def steps():
        await svc.create_session(app_name="app", user_id="u", session_id="s")
        first = await svc.get_session(app_name="app", user_id="u", session_id="s")
        second = await svc.get_session(app_name="app", user_id="u", session_id="s")
        await svc.append_event(first, event("i1", {"k": "first"}))
        with pytest.raises(StaleSessionError, match="modified in storage"):
            await svc.append_event(second, event("i2", {"k": "second"}))
        stored = await svc.get_session(app_name="app", user_id="u", session_id="s")
        assert stored.state == {"k": "first"} and len(stored.events) == 1
        assert second.state == {} and second.events == [], "the refused handle is left as it was"
        with pytest.raises(SessionNotFoundError):
            await svc.delete_session(app_name="app", user_id="u", session_id="s")
            await svc.append_event(first, event("i3", {"k": 3}))

    run(steps())


def test_partial_events_are_not_stored(server):
    svc = AgentstateSessionService(server.url)

    async def steps():
        s = await svc.create_session(app_name="app", user_id="u", session_id="p")
        partial = event("i", {"k": 1}, "stream")
        partial.partial = True
        assert await svc.append_event(s, partial) is partial
        assert (await svc.get_session(app_name="app", user_id="u", session_id="p")).events == []

    run(steps())


def test_tokens_are_sent_and_refusals_are_typed():
    server = Server(tokens=[{"token": "test-token-0123456789", "apps": ["app"], "users": ["u"]}])
    try:
        async def steps():
            ok = AgentstateSessionService(server.url, token="test-token-0123456789")
            await ok.create_session(app_name="app", user_id="u", session_id="s")
            with pytest.raises(AgentstateAuthError) as denied:
                await ok.create_session(app_name="app", user_id="someone-else")
            assert denied.value.status == 403
            with pytest.raises(AgentstateAuthError) as unknown:
                await AgentstateSessionService(server.url).get_session(app_name="app", user_id="u", session_id="s")
            assert unknown.value.status == 401
            assert "test-token" not in repr(ok)

        run(steps())
    finally:
        server.stop()


def test_bad_urls_down_servers_and_timeouts():
    for bad in ["", "ftp://host", "localhost:8000", "agentstate://"]:
        with pytest.raises(ValueError):
            AgentstateSessionService(bad)
    assert AgentstateSessionService(uri="agentstate+https://example.com/base")._base == "https://example.com/base"

    # Nothing listens on this port.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(AgentstateUnavailableError, match="unreachable"):
        run(AgentstateSessionService(f"http://127.0.0.1:{port}").get_session(app_name="a", user_id="u", session_id="s"))

    # A server that accepts and never answers.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    slow = AgentstateSessionService(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.5)
    with pytest.raises(AgentstateUnavailableError, match="did not answer"):
        run(slow.get_session(app_name="a", user_id="u", session_id="s"))
    listener.close()


def test_keywords_it_does_not_know_are_refused():
    # What ADK's service registry passes is taken; anything else is a mistake worth hearing about.
    AgentstateSessionService(uri="agentstate://127.0.0.1:8000", agents_dir="/agents")
    for service in (AgentstateSessionService, AgentstateMemoryService, AgentstateArtifactService):
        with pytest.raises(TypeError, match="compacted_load"):
            service("http://127.0.0.1:8000", compacted_load=True)


def test_a_load_is_what_adks_model_makes_of_the_answer(server):
    """The answer's bytes go through ADK's `Session` model once; the session is the one its
    validation of the parsed answer makes, also when state holds a key named like agentstate's
    `expireTime` extension (which sends the load the long way)."""
    svc = AgentstateSessionService(server.url)

    async def steps():
        for state in ({"k": 1}, {"expireTime": "a state key, not the extension"}):
            s = await svc.create_session(app_name="once", user_id="u", state=state)
            call = types.FunctionCall(id="c1", name="lookup", args={"q": "x"})
            e = Event(invocation_id="i1", author="agent", content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            await svc.append_event(s, e)
            await svc.append_event(s, event("i1", {"n": 1}, text='a "quoted" answer'))
            got = await svc.get_session(app_name="once", user_id="u", session_id=s.id)
            raw = (await svc._http().get(f"/apps/once/users/u/sessions/{s.id}")).json()
            assert got == Session.model_validate(raw)
            assert got.state == {**state, "n": 1}
        await svc.close()

    run(steps())


def test_invalid_ids_are_refused_by_the_server(server):
    svc = AgentstateSessionService(server.url)
    with pytest.raises(AgentstateError) as bad:
        run(svc.create_session(app_name="app", user_id=" padded", session_id="s"))
    assert bad.value.status == 400


def test_expiring_sessions_read_as_adk_sessions():
    """A server whose sessions expire answers `expireTime`; the package reads them as ADK's
    `Session`, which has no such field, and an expired session is gone."""
    server = Server(options=["--session-ttl", "1"])
    try:
        svc = AgentstateSessionService(server.url)

        async def steps():
            s = await svc.create_session(app_name="app", user_id="u", session_id="e1", state={"k": 1})
            await svc.append_event(s, event("i1", {"k": 2}))
            got = await svc.get_session(app_name="app", user_id="u", session_id="e1")
            assert got.state == {"k": 2}
            listed = await svc.list_sessions(app_name="app", user_id="u")
            assert [x.id for x in listed.sessions] == ["e1"]
            await asyncio.sleep(1.2)
            assert await svc.get_session(app_name="app", user_id="u", session_id="e1") is None
            assert (await svc.list_sessions(app_name="app", user_id="u")).sessions == []

        run(steps())
    finally:
        server.stop()


def test_user_state_is_read_without_a_session(server):
    svc = AgentstateSessionService(server.url)

    async def steps():
        assert await svc.get_user_state(app_name="app", user_id="u") == {}
        session = await svc.create_session(app_name="app", user_id="u", state={"user:lang": "fr", "app:x": 1, "own": 2})
        await svc.delete_session(app_name="app", user_id="u", session_id=session.id)
        assert await svc.get_user_state(app_name="app", user_id="u") == {"lang": "fr"}, "outlives its sessions"
        assert await svc.get_user_state(app_name="app", user_id="other") == {}

    run(steps())


def test_sessions_are_listed_by_creation_and_filter(server):
    svc = AgentstateSessionService(server.url)

    async def steps():
        first = await svc.create_session(app_name="app", user_id="lf", session_id="a", state={"stage": 1})
        await svc.create_session(app_name="app", user_id="lf", session_id="b", state={"stage": 2})
        await svc.create_session(app_name="app", user_id="lf", session_id="c", state={"stage": 1})
        await svc.append_event(first, event("i1", {"note": "moves a to the newest by update"}))
        by_update = await svc.list_sessions(app_name="app", user_id="lf", newest_first=True, limit=1)
        assert [s.id for s in by_update.sessions] == ["a"]
        by_creation = await svc.list_sessions(app_name="app", user_id="lf", order_by="create_time desc")
        assert [s.id for s in by_creation.sessions] == ["c", "b", "a"]
        staged = await svc.list_sessions(app_name="app", user_id="lf", order_by="create_time", filter="state.stage=1")
        assert [s.id for s in staged.sessions] == ["a", "c"]
        assert (await svc.list_sessions(app_name="app", labels={"team": 'r"ed'})).sessions == []
        try:
            await svc.list_sessions(app_name="app", filter='state.stage=1 OR state.stage=2')
        except AgentstateError as refused:
            assert "character 15" in str(refused), refused
        else:
            raise AssertionError("an OR filter was accepted")

    run(steps())
