"""AgentstateSessionService: google-adk's BaseSessionService over an agentstate server's HTTP API."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Optional
from urllib.parse import parse_qsl, urlparse

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from pydantic import BaseModel, ConfigDict, Field

from ._build import Unsure, build
from ._http import (
    AgentstateAuthError,
    AgentstateError,
    AgentstateUnavailableError,
    _Client,
    _segment,
)

__all__ = [
    "AgentstateSessionService",
    "AgentstateError",
    "AgentstateAuthError",
    "AgentstateUnavailableError",
]

#: Sessions per page when following the server's pagination.
PAGE_SIZE = 100


def _session(body: bytes) -> Session:
    """A session from the server's answer: parsed once (`json.loads`), and built from it without
    validating again what ADK validated when it wrote the events (`_build`), unless the answer
    holds something the plans cannot build exactly as validation would; then validated as ADK
    always has."""
    with _collector_paused():
        return _session_of(json.loads(body))


def _session_of(data: dict[str, Any]) -> Session:
    """A session from its parsed JSON; agentstate's ``expireTime`` (which ADK's model refuses)
    dropped."""
    if isinstance(data, dict):
        data.pop("expireTime", None)
    try:
        return build(Session, data)
    except Unsure:
        # From JSON, as the server sent it: bytes are base64 there (in Python mode they are not).
        return Session.model_validate_json(json.dumps(data))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a session's objects are made: building thousands of
    objects that all survive otherwise runs it again and again over the growing heap, doubling
    the time of a long session's load. Nothing is lost: it runs as usual once it is back on."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _uri_options(url: str) -> dict[str, str]:
    """The session options in a URL's query: `compacted_loads` (`true` or `false`) and
    `compaction_overlap` (a whole number); any other name or value is a `ValueError`."""
    options = dict(parse_qsl(urlparse(url).query, keep_blank_values=True))
    unknown = set(options) - {"compacted_loads", "compaction_overlap"}
    if unknown:
        raise ValueError(f"unknown option(s) in {url!r}: {', '.join(sorted(unknown))}")
    if options.get("compacted_loads", "false") not in ("true", "false"):
        raise ValueError(f"compacted_loads must be true or false in {url!r}")
    if not options.get("compaction_overlap", "1").isdigit():
        raise ValueError(f"compaction_overlap must be a whole number in {url!r}")
    return options


class _Page(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    sessions: list[dict[str, Any]]
    next_page_token: Optional[str] = Field(default=None, alias="nextPageToken")


class _Appended(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    event: Event
    last_update_time: float = Field(alias="lastUpdateTime")
    duplicate: bool = False


class AgentstateSessionService(_Client, BaseSessionService):
    """Sessions kept by an agentstate server (`agentstate serve`), for ADK for Python.

    A drop-in for `DatabaseSessionService` or `InMemorySessionService`: pass it to `Runner`.
    Unlike them, concurrent writers of `user:`/`app:` keys lose nothing, an append through a
    session loaded before another append is refused with `StaleSessionError` (checked by the
    server, atomically), `GetSessionConfig` windows are answered by the server without loading the
    whole history, and lists follow the server's pages.

    Args:
      base_url: the server, `http://127.0.0.1:8000` (or `agentstate://host:port`).
      uri: the same, as ADK's service registry passes it (`--session_service_uri agentstate://…`).
      token: an access token of the server (`--tokens-file`); else `AGENTSTATE_TOKEN`, else none.
      timeout: seconds per request.
      client: an `httpx.AsyncClient` to use instead of the service's own.
      ca_file: a PEM bundle of CAs to trust beside the system's, for a server serving TLS with a
        certificate of a private CA; else `AGENTSTATE_CA_FILE`, else the system's alone.
      agents_dir: accepted, and unused: ADK's service registry passes it.
      compacted_loads: load only what ADK reads of a history it compacts
        (`App(events_compaction_config=...)`): the summaries, the events they do not cover and
        the next summary's window, chosen by the server (`view=compacted`). The model is sent
        the same requests; a long conversation loads in time that grows with what it is shown.
        Off by default: the whole history.
      compaction_overlap: the app's `EventsCompactionConfig.overlap_size` (default 1), which
        sets where the next summary's window starts. Both may come in the URI's query, as ADK's
        registry passes it: `agentstate://host:port?compacted_loads=true&compaction_overlap=1`.

    Any other keyword is a `TypeError`.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        compacted_loads: Optional[bool] = None,
        compaction_overlap: Optional[int] = None,
        **client: Any,
    ) -> None:
        super().__init__(base_url, **client)
        # ADK's service registry passes only a URI: the two options may come in its query
        # (`agentstate://host:port?compacted_loads=true&compaction_overlap=1`); keywords win.
        options = _uri_options(base_url or client.get("uri") or "")
        if compacted_loads is None:
            compacted_loads = options.get("compacted_loads", "false") == "true"
        if compaction_overlap is None:
            compaction_overlap = int(options.get("compaction_overlap", "1"))
        if not isinstance(compacted_loads, bool):
            raise TypeError(f"compacted_loads must be True or False, not {compacted_loads!r}")
        if isinstance(compaction_overlap, bool) or not isinstance(compaction_overlap, int) or compaction_overlap < 0:
            raise ValueError(f"compaction_overlap must be a whole number of invocations, 0 or more, not {compaction_overlap!r}")
        self._compacted = {"view": "compacted", "overlap": compaction_overlap} if compacted_loads else {}

    @staticmethod
    def _sessions(app_name: str, user_id: str) -> str:
        return f"/apps/{_segment(app_name)}/users/{_segment(user_id)}/sessions"

    # -- BaseSessionService ---------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: Optional[dict[str, Any]] = None,
        session_id: Optional[str] = None,
    ) -> Session:
        body: dict[str, Any] = {}
        if session_id:
            body["sessionId"] = session_id
        if state:
            body["state"] = state
        response = await self._request("POST", self._sessions(app_name, user_id), json=body)
        if response.status_code == 409:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        if response.status_code != 200:
            raise self._fail(response)
        return _session(response.content)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: Optional[GetSessionConfig] = None,
    ) -> Optional[Session]:
        params: dict[str, Any] = dict(self._compacted)
        if config is not None and config.num_recent_events is not None:
            params["numRecentEvents"] = config.num_recent_events
        if config is not None and config.after_timestamp is not None:
            params["afterTimestamp"] = config.after_timestamp
        path = f"{self._sessions(app_name, user_id)}/{_segment(session_id)}"
        response = await self._request("GET", path, params=params)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise self._fail(response)
        return _session(response.content)

    async def _rewind_delta(self, session: Session, invocation_id: str) -> dict[str, Any]:
        """The state delta of a rewind before `invocation_id`, as ADK computes it, over the whole
        history: a compacted load lacks the covered events that last wrote some keys."""
        from google.adk.sessions import _rewind_utils

        whole = await self._whole(session)
        first = next((i for i, e in enumerate(whole.events) if e.invocation_id == invocation_id), None)
        if first is None:
            raise AgentstateError(f"no event of invocation {invocation_id!r} in session {session.id}")
        return await _rewind_utils.compute_state_delta_for_rewind(whole, first)

    async def _whole(self, session: Session) -> Session:
        path = f"{self._sessions(session.app_name, session.user_id)}/{_segment(session.id)}"
        response = await self._request("GET", path)
        if response.status_code == 404:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        if response.status_code != 200:
            raise self._fail(response)
        return _session(response.content)

    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: Optional[str] = None,
        newest_first: bool = False,
        limit: Optional[int] = None,
        offset: int = 0,
        order_by: Optional[str] = None,
        filter: Optional[str] = None,
        labels: Optional[Mapping[str, str]] = None,
    ) -> ListSessionsResponse:
        """The sessions, oldest update first as the reference lists them; agentstate's extensions:
        ``newest_first``, and ``limit`` sessions after skipping ``offset``, all chosen by the server
        (a "latest 20" sidebar is one request); ``order_by`` as Agent Engine takes it
        (``"create_time"``, ``"update_time desc"``); ``filter`` in Agent Engine's syntax
        (``'labels.team="red" AND state.stage=2 AND update_time>="2026-11-01T00:00:00Z"'``),
        and ``labels`` every one of which a session must carry. A bad filter raises
        ``AgentstateError`` (400) saying where it went wrong."""
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        if offset < 0:
            raise ValueError(f"offset must not be negative, not {offset}")
        path = self._sessions(app_name, user_id) if user_id is not None else f"/apps/{_segment(app_name)}/sessions"
        sessions: list[Session] = []
        token: Optional[str] = None
        while True:
            params: dict[str, Any] = {"pageSize": PAGE_SIZE if limit is None else limit - len(sessions)}
            if newest_first:
                params["order"] = "desc"
            if order_by:
                params["orderBy"] = order_by
            terms = [filter] if filter else []
            terms += [f"labels.{_quote(k)}={_quote(v)}" for k, v in (labels or {}).items()]
            if terms:
                params["filter"] = " AND ".join(terms)
            if token:
                params["pageToken"] = token
            elif offset:
                params["offset"] = offset
            response = await self._request("GET", path, params=params)
            if response.status_code != 200:
                raise self._fail(response)
            page = _Page.model_validate_json(response.content)
            with _collector_paused():
                sessions.extend(_session_of(s) for s in page.sessions)
            token = page.next_page_token
            if not token or (limit is not None and len(sessions) >= limit):
                return ListSessionsResponse(sessions=sessions)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state without a session: raw (un-prefixed) keys, ``{}`` when none.
        Read by the server from its store; it outlives the user's sessions."""
        response = await self._request("GET", f"/apps/{_segment(app_name)}/users/{_segment(user_id)}/state")
        if response.status_code == 501:
            raise NotImplementedError(self._detail(response))
        if response.status_code != 200:
            raise self._fail(response)
        return dict(response.json())

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        path = f"{self._sessions(app_name, user_id)}/{_segment(session_id)}"
        response = await self._request("DELETE", path)
        if response.status_code != 200:
            raise self._fail(response)

    async def append_event(self, session: Session, event: Event) -> Event:
        """Stores the event whole on the server, which merges its delta key by key and refuses it
        if the session changed since `session` was loaded; then applies it to `session` as the
        reference does (`temp:` keys in memory only)."""
        if event.partial:
            return event
        if self._compacted and event.actions.rewind_before_invocation_id:
            event.actions.state_delta = await self._rewind_delta(session, event.actions.rewind_before_invocation_id)
        body = {
            "event": event.model_dump(mode="json", by_alias=True, exclude_none=True),
            "expectedLastUpdateTime": session.last_update_time,
        }
        path = f"{self._sessions(session.app_name, session.user_id)}/{_segment(session.id)}/events"
        response = await self._request("POST", path, json=body)
        if response.status_code == 404:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        if response.status_code == 409:
            detail = self._detail(response)
            if "modified in storage" in detail:
                raise StaleSessionError(detail)
            raise AgentstateError(detail, 409)
        if response.status_code != 200:
            raise self._fail(response)
        stored = _Appended.model_validate_json(response.content)
        session.last_update_time = stored.last_update_time
        if stored.duplicate:
            # Stored before, by this or another handle: nothing changed on the server.
            return stored.event
        event.id = stored.event.id
        event.timestamp = stored.event.timestamp
        return await super().append_event(session, event)


def _quote(text: str) -> str:
    """A string literal of Agent Engine's filter syntax."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
