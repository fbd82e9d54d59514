"""AgentstateArtifactService: google-adk's BaseArtifactService over an agentstate server's HTTP API."""

from __future__ import annotations

from typing import Any, Optional, Union

from google.adk.artifacts.base_artifact_service import ArtifactVersion, BaseArtifactService, ensure_part
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from ._http import _Client, _segment

__all__ = ["AgentstateArtifactService"]


class AgentstateArtifactService(_Client, BaseArtifactService):
    """Artifacts kept by an agentstate server (`agentstate serve`), for ADK for Python.

    A drop-in for `InMemoryArtifactService`: pass it to `Runner(artifact_service=…)`, or run
    `adk api_server --artifact_service_uri agentstate://host:port`. Versions start at 0, `user:`
    names belong to the user in every session, and the artifacts live in the server's database
    beside the sessions: deleting a session deletes its artifacts, `erase-user` removes the user's,
    encryption at rest seals them. ADK's refusals come back as its `InputValidationError`.

    Args:
      base_url: the server, `http://127.0.0.1:8000` (or `agentstate://host:port`).
      uri: the same, as ADK's service registry passes it (`--artifact_service_uri agentstate://…`).
      token: an access token of the server (`--tokens-file`); else `AGENTSTATE_TOKEN`, else none.
      timeout: seconds per request.
      client: an `httpx.AsyncClient` to use instead of the service's own.
      ca_file: a PEM bundle of CAs to trust beside the system's (a server's private CA); else
        `AGENTSTATE_CA_FILE`.
    """

    @staticmethod
    def _root(app_name: str, user_id: str, session_id: Optional[str]) -> str:
        """The artifacts of a session, or (without one) the user's own `user:` artifacts."""
        user = f"/apps/{_segment(app_name)}/users/{_segment(user_id)}"
        if session_id is None:
            return f"{user}/artifacts"
        return f"{user}/sessions/{_segment(session_id)}/artifacts"

    @staticmethod
    def _name(filename: str) -> str:
        # Names may hold `/`, which the routes take as it is.
        return "/".join(_segment(part) for part in filename.split("/"))

    async def _call(self, method: str, path: str, *, missing: Any = ..., **kwargs: Any) -> Any:
        response = await self._request(method, path, **kwargs)
        if response.status_code == 404 and missing is not ...:
            return missing
        if response.status_code == 400:
            raise InputValidationError(self._detail(response))
        if response.status_code == 501:
            raise NotImplementedError(self._detail(response))
        if response.status_code != 200:
            raise self._fail(response)
        return response.json()

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: Union[types.Part, dict[str, Any]],
        session_id: Optional[str] = None,
        custom_metadata: Optional[dict[str, Any]] = None,
    ) -> int:
        """Saves `artifact` as the next version of `filename` (0 for a new one); its number."""
        part = ensure_part(artifact)
        body: dict[str, Any] = {
            "filename": filename,
            "artifact": part.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        if custom_metadata:
            body["customMetadata"] = custom_metadata
        saved = await self._call("POST", self._root(app_name, user_id, session_id), json=body)
        return int(saved["version"])

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: Optional[str] = None,
        version: Optional[int] = None,
    ) -> Optional[types.Part]:
        """A version of `filename` (the latest by default), or None."""
        path = f"{self._root(app_name, user_id, session_id)}/{self._name(filename)}"
        params = {} if version is None else {"version": version}
        data = await self._call("GET", path, params=params, missing=None)
        return None if data is None else types.Part.model_validate(data)

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: Optional[str] = None
    ) -> list[str]:
        """The session's names and the user's `user:` names, sorted."""
        return list(await self._call("GET", self._root(app_name, user_id, session_id)))

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> None:
        """Deletes every version of `filename` (nothing to delete is fine)."""
        await self._call("DELETE", f"{self._root(app_name, user_id, session_id)}/{self._name(filename)}")

    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> list[int]:
        """The version numbers of `filename`, oldest first."""
        path = f"{self._root(app_name, user_id, session_id)}/{self._name(filename)}/versions"
        return [int(v) for v in await self._call("GET", path)]

    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None
    ) -> list[ArtifactVersion]:
        """Every version's metadata, oldest first."""
        path = f"{self._root(app_name, user_id, session_id)}/{self._name(filename)}/versions/metadata"
        return [ArtifactVersion.model_validate(v) for v in await self._call("GET", path)]

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: Optional[str] = None,
        version: Optional[int] = None,
    ) -> Optional[ArtifactVersion]:
        """One version's metadata (the latest by default), or None."""
        which = "latest" if version is None else str(version)
        path = f"{self._root(app_name, user_id, session_id)}/{self._name(filename)}/versions/{which}/metadata"
        data = await self._call("GET", path, missing=None)
        return None if data is None else ArtifactVersion.model_validate(data)
