"""What agentstate's services for ADK share: the server's URL, its token, and HTTP requests to it."""

from __future__ import annotations

import asyncio
import os
import ssl
from typing import Any, Optional
from urllib.parse import quote, urlparse

import httpx
from opentelemetry import propagate

#: The environment variable a token is read from when none is given.
TOKEN_ENV = "AGENTSTATE_TOKEN"
#: The environment variable a CA bundle is read from when none is given.
CA_FILE_ENV = "AGENTSTATE_CA_FILE"


class AgentstateError(Exception):
    """The agentstate server refused a request (the message is the server's)."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


class AgentstateAuthError(AgentstateError, PermissionError):
    """401 or 403: no token, an unknown token, or one that may not touch this app or user."""


class AgentstateUnavailableError(AgentstateError, ConnectionError):
    """The server cannot be reached, timed out, or answered 5xx; the same call may succeed later."""


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


class _Client:
    """An agentstate server over HTTP: one `httpx.AsyncClient` per event loop, errors mapped."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        uri: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 30.0,
        client: Optional[httpx.AsyncClient] = None,
        ca_file: Optional[str] = None,
        agents_dir: Optional[str] = None,
    ) -> None:
        # `agents_dir` is what ADK's service registry passes every service it makes (`adk web`,
        # `adk api_server` with `--session_service_uri agentstate://…`): nothing of ours. Any other
        # keyword is refused by Python itself (TypeError), rather than silently ignored.
        del agents_dir
        url = base_url or uri
        if not url:
            raise ValueError(f"give the agentstate server's URL: {type(self).__name__}('http://127.0.0.1:8000')")
        self._base = _base_url(url)
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout
        ca_file = ca_file if ca_file is not None else os.environ.get(CA_FILE_ENV)
        # The system's CAs, and those of the bundle (a server's `--tls-cert` from a private CA).
        self._verify: ssl.SSLContext | bool = True
        if ca_file:
            self._verify = ssl.create_default_context()
            self._verify.load_verify_locations(cafile=ca_file)
        self._own_client = client is None
        self._client = client
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def __repr__(self) -> str:  # never the token
        return f"{type(self).__name__}({self._base!r})"

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
                transport=httpx.AsyncHTTPTransport(retries=2, verify=self._verify),
            )
            self._loop = loop
        return self._client

    async def close(self) -> None:
        """Closes the service's own HTTP client."""
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        # The caller's trace (ADK's invocation, agent and tool spans) goes on as the server's: a
        # W3C `traceparent` from the context current at the call, when a propagator is installed.
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        if carrier:
            kwargs["headers"] = {**carrier, **kwargs.get("headers", {})}
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
