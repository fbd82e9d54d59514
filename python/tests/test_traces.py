"""ADK for Python's spans and the server's are one trace: the package sends a W3C `traceparent`
from the context current at each call, and a server exporting OpenTelemetry traces
(`OTEL_EXPORTER_OTLP_ENDPOINT`) makes its request spans children of ADK's."""

from __future__ import annotations

import asyncio
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from conftest import Server
from google.adk.runners import Runner
from google.genai import types
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from scripted import agent

from agentstate_adk import AgentstateSessionService


class Receiver:
    """An OTLP/HTTP receiver on loopback, keeping (trace id, span id, parent id, name) of each span."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str, str, str]] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                request = ExportTraceServiceRequest.FromString(self.rfile.read(int(self.headers["Content-Length"])))
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        for s in scope.spans:
                            received.append((s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name))
                body = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()


def test_adk_spans_and_the_servers_are_one_trace():
    receiver = Receiver()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    server = Server(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"})
    try:
        service = AgentstateSessionService(server.url)
        runner = Runner(app_name="traced", agent=agent(), session_service=service)

        async def turn() -> None:
            session = await service.create_session(app_name="traced", user_id="u", state={"topic": "trips"})
            message = types.Content(role="user", parts=[types.Part(text="alice likes tea")])
            async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
                pass
            await service.close()

        asyncio.run(turn())
        ours = exporter.get_finished_spans()
        adk_spans = {format(s.context.span_id, "016x"): s.name for s in ours}
        adk_traces = {format(s.context.trace_id, "032x") for s in ours}
        assert adk_spans, "ADK made no spans"

        appends = []
        deadline = time.monotonic() + 20
        while not appends and time.monotonic() < deadline:
            time.sleep(0.1)
            appends = [
                s for s in list(receiver.spans)
                if s[3] == "POST /apps/{app_name}/users/{user_id}/sessions/{session_id}/events" and s[2] in adk_spans
            ]
        assert appends, f"no append span of the server under an ADK span; the server sent {receiver.spans}"
        for trace_id, _, parent, _ in appends:
            assert trace_id in adk_traces
        # The server's storage spans hang under its request spans, in ADK's trace.
        requests = {s[1] for s in receiver.spans if s[2] in adk_spans}
        assert any(s[2] in requests and s[3] in ("append_event", "append_at") for s in receiver.spans), receiver.spans
    finally:
        server.stop()
        receiver.stop()
