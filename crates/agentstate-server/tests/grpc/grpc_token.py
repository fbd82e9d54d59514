"""Tokens for the scenario scripts beside it: a cleartext gRPC channel that sends a bearer
token (gRPC's own call credentials need TLS), and the REST transport's credentials."""

import grpc
from google.auth.credentials import AnonymousCredentials
from google.oauth2.credentials import Credentials


class Details(grpc.ClientCallDetails):
    """A call's details with other metadata."""

    def __init__(self, method, timeout, metadata, credentials, wait_for_ready, compression):
        self.method, self.timeout, self.metadata = method, timeout, metadata
        self.credentials, self.wait_for_ready, self.compression = credentials, wait_for_ready, compression


class WithToken(grpc.UnaryUnaryClientInterceptor):
    """Adds `authorization: Bearer …` to every call."""

    def __init__(self, value):
        self.value = value

    def intercept_unary_unary(self, continuation, d, request):
        metadata = list(d.metadata or []) + [("authorization", f"Bearer {self.value}")]
        return continuation(Details(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready, d.compression), request)


def cleartext_channel(address, token):
    """A cleartext channel to address, sending token (if any) on every call."""
    channel = grpc.insecure_channel(address)
    return grpc.intercept_channel(channel, WithToken(token)) if token else channel


def bearer(token):
    """The REST transport's credentials: the token, or none."""
    return Credentials(token) if token else AnonymousCredentials()
