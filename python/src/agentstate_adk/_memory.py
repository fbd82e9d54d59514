"""AgentstateMemoryService: google-adk's BaseMemoryService over an agentstate server's HTTP API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from ._http import AgentstateError, _Client, _segment

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

__all__ = ["AgentstateMemoryService"]

#: Memories a search answers, as ADK's in-memory service.
SEARCH_LIMIT = 10
#: Memories per page when listing.
PAGE_SIZE = 100


def _entry(data: dict[str, Any]) -> MemoryEntry:
    """A memory as the server answers it, as ADK's ``MemoryEntry``."""
    return MemoryEntry(
        id=data.get("id"),
        content=types.Content.model_validate(data.get("content") or {}),
        custom_metadata=data.get("customMetadata") or {},
        author=data.get("author"),
        timestamp=data.get("timestamp"),
    )


def _event_json(event: "Event") -> dict[str, Any]:
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


class AgentstateMemoryService(_Client, BaseMemoryService):
    """Long-term memory kept by an agentstate server (`agentstate serve`), for ADK for Python.

    A drop-in for `InMemoryMemoryService`: pass it to `Runner(memory_service=…)`, or run
    `adk api_server --memory_service_uri agentstate://host:port`. It finds what the in-memory
    service finds (the server matches words by the same rules), keeps memories in the server's
    database beside the sessions (so `erase-user` removes them), and adding a session again stores
    each event once.

    Args:
      base_url: the server, `http://127.0.0.1:8000` (or `agentstate://host:port`).
      uri: the same, as ADK's service registry passes it (`--memory_service_uri agentstate://…`).
      token: an access token of the server (`--tokens-file`); else `AGENTSTATE_TOKEN`, else none.
      timeout: seconds per request.
      client: an `httpx.AsyncClient` to use instead of the service's own.
      ca_file: a PEM bundle of CAs to trust beside the system's (a server's private CA); else
        `AGENTSTATE_CA_FILE`.
    """

    @staticmethod
    def _user(app_name: str, user_id: str) -> str:
        return f"/apps/{_segment(app_name)}/users/{_segment(user_id)}"

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self._request(method, path, **kwargs)
        if response.status_code == 501:
            raise NotImplementedError(self._detail(response))
        if response.status_code != 200:
            raise self._fail(response)
        return response.json()

    async def add_session_to_memory(self, session: "Session") -> None:
        """The session's events with text become its memories, replacing what it added before.
        The session is sent whole: it need not be kept by this server."""
        path = f"{self._user(session.app_name, session.user_id)}/memory/sessions/{_segment(session.id)}"
        await self._call("PUT", path, json={"events": [_event_json(e) for e in session.events]})

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence["Event"],
        session_id: Optional[str] = None,
        custom_metadata: Optional[Mapping[str, object]] = None,
    ) -> None:
        """Adds the events with text, each event id once per session (or once without one).
        ``custom_metadata`` is kept on each memory; its ``ttl`` (seconds, or ``"3600s"``) makes
        them expire."""
        body: dict[str, Any] = {"events": [_event_json(e) for e in events]}
        if session_id:
            body["sessionId"] = session_id
        if custom_metadata:
            body["customMetadata"] = dict(custom_metadata)
        await self._call("POST", f"{self._user(app_name, user_id)}/memory/events", json=body)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Optional[Mapping[str, object]] = None,
    ) -> None:
        """Writes memories directly (an id is generated for one without)."""
        body: dict[str, Any] = {
            "memories": [
                {
                    "id": m.id,
                    "content": m.content.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "customMetadata": m.custom_metadata,
                    "author": m.author,
                    "timestamp": m.timestamp,
                }
                for m in memories
            ]
        }
        if custom_metadata:
            body["customMetadata"] = dict(custom_metadata)
        await self._call("POST", f"{self._user(app_name, user_id)}/memories", json=body)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories sharing the most words with ``query`` (at most 10); none for a query
        without words, as ADK's services answer it."""
        path = f"{self._user(app_name, user_id)}/memories"
        response = await self._request("GET", path, params={"query": query, "limit": SEARCH_LIMIT})
        if response.status_code == 400 and "no words" in self._detail(response):
            return SearchMemoryResponse()
        if response.status_code == 501:
            raise NotImplementedError(self._detail(response))
        if response.status_code != 200:
            raise self._fail(response)
        return SearchMemoryResponse(memories=[_entry(m) for m in response.json()["memories"]])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: Optional[str] = None) -> None:
        """Deletes the user's memories with this id; adding their session again leaves them out.
        An unknown id is not an error, as in ADK's services."""
        if not memory_id:
            return
        response = await self._request("DELETE", f"{self._user(app_name, user_id)}/memories/{_segment(memory_id)}")
        if response.status_code not in (200, 404):
            raise self._fail(response)

    # -- agentstate's extensions ----------------------------------------------------------------

    async def list_memories(self, *, app_name: str, user_id: str) -> list[MemoryEntry]:
        """Every memory of the user, oldest first (the server's pages followed)."""
        memories: list[MemoryEntry] = []
        token: Optional[str] = None
        while True:
            params: dict[str, Any] = {"pageSize": PAGE_SIZE}
            if token:
                params["pageToken"] = token
            page = await self._call("GET", f"{self._user(app_name, user_id)}/memories", params=params)
            memories.extend(_entry(m) for m in page["memories"])
            token = page.get("nextPageToken")
            if not token:
                return memories

    async def delete_user_memories(self, *, app_name: str, user_id: str) -> int:
        """Deletes every memory of the user; how many."""
        answer = await self._call("DELETE", f"{self._user(app_name, user_id)}/memories")
        if not isinstance(answer, dict):
            raise AgentstateError(f"unexpected answer {answer!r}")
        return int(answer["deleted"])
