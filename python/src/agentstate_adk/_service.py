"""AgentstateSessionService: google-adk's BaseSessionService over an agentstate server's HTTP API."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Optional
from urllib.parse import quote, urlparse

import httpx
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

__all__ = [
    "AgentstateSessionService",
    "AgentstateError",
    "AgentstateAuthError",
    "AgentstateUnavailableError",
]

#: The environment variable a token is read from when none is given.
TOKEN_ENV = "AGENTSTATE_TOKEN"
#: Sessions per page when following the server's pagination.
PAGE_SIZE = 100


class AgentstateError(Exception):
    """The agentstate server refused a request (the message is the server's)."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


class AgentstateAuthError(AgentstateError, PermissionError):
    """401 or 403: no token, an unknown token, or one that may not touch this app or user."""


class AgentstateUnavailableError(AgentstateError, ConnectionError):
    """The server cannot be reached, timed out, or answered 5xx; the same call may succeed later."""


def _session(data: dict[str, Any]) -> Session:
    """A session as the server answers it, without agentstate's extensions (``expireTime``), which
    ADK's model refuses."""
    data.pop("expireTime", None)
    return Session.model_validate(data)


class _Page(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    sessions: list[dict[str, Any]]
    next_page_token: Optional[str] = Field(default=None, alias="nextPageToken")


class _Appended(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    event: Event
    last_update_time: float = Field(alias="lastUpdateTime")
    duplicate: bool = False


def _base_url(url: str) -> str:
    """`http(s)://host:port[/prefix]`, or the `agentstate://host:port` form of ADK's service URIs
    (`agentstate+https://` for TLS)."""
    parsed = urlparse(url)
    scheme = {"agentstate": "http", "agentstate+http": "http", "agentstate+https": "https"}.get(
        parsed.scheme, parsed.scheme
    )
    if scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(
            f"{url!r} is not an agentstate server URL: use http://host:port, https://host, or agentstate://host:port"
        )
    return f"{scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"


def _segment(value: str) -> str:
    return quote(value, safe="")


class AgentstateSessionService(BaseSessionService):
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
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        uri: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 30.0,
        client: Optional[httpx.AsyncClient] = None,
        **_: Any,
    ) -> None:
        url = base_url or uri
        if not url:
            raise ValueError("give the agentstate server's URL: AgentstateSessionService('http://127.0.0.1:8000')")
        self._base = _base_url(url)
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout
        self._own_client = client is None
        self._client = client
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def __repr__(self) -> str:  # never the token
        return f"AgentstateSessionService({self._base!r})"

    # -- HTTP ---------------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        """The client, one per event loop (a client is bound to the loop it first ran on)."""
        if not self._own_client:
            assert self._client is not None
            return self._client
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = httpx.AsyncClient(
                base_url=self._base,
                headers=self._headers,
                timeout=self._timeout,
                transport=httpx.AsyncHTTPTransport(retries=2),
            )
            self._loop = loop
        return self._client

    async def close(self) -> None:
        """Closes the service's own HTTP client."""
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self._http().request(method, path, **kwargs)
        except httpx.TimeoutException as e:
            raise AgentstateUnavailableError(f"agentstate at {self._base} did not answer in {self._timeout} s") from e
        except httpx.TransportError as e:
            raise AgentstateUnavailableError(f"agentstate at {self._base} is unreachable: {e}") from e
        return response

    @staticmethod
    def _detail(response: httpx.Response) -> str:
        try:
            detail = response.json().get("detail")
        except ValueError:
            detail = None
        if isinstance(detail, str):
            return detail
        if detail is not None:
            return str(detail)
        return response.text[:200] or response.reason_phrase

    def _fail(self, response: httpx.Response) -> AgentstateError:
        status, detail = response.status_code, self._detail(response)
        if status in (401, 403):
            return AgentstateAuthError(detail, status)
        if status >= 500:
            return AgentstateUnavailableError(f"agentstate answered {status}: {detail}", status)
        return AgentstateError(detail, status)

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
        return _session(response.json())

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: Optional[GetSessionConfig] = None,
    ) -> Optional[Session]:
        params: dict[str, Any] = {}
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
        return _session(response.json())

    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: Optional[str] = None,
        newest_first: bool = False,
        limit: Optional[int] = None,
        offset: int = 0,
    ) -> ListSessionsResponse:
        """The sessions, oldest update first as the reference lists them; agentstate's extensions:
        ``newest_first``, and ``limit`` sessions after skipping ``offset``, all chosen by the server
        (a "latest 20" sidebar is one request)."""
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
            if token:
                params["pageToken"] = token
            elif offset:
                params["offset"] = offset
            response = await self._request("GET", path, params=params)
            if response.status_code != 200:
                raise self._fail(response)
            page = _Page.model_validate_json(response.content)
            sessions.extend(_session(s) for s in page.sessions)
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
