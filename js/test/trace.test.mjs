// The package carries the caller's trace: each request sends a W3C `traceparent` from the active
// OpenTelemetry context (when a propagator is registered), and none without one. A pass-through
// in front of a real server records what arrives.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, test } from 'node:test';

import { context, propagation, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

import { AgentstateSessionService } from 'agentstate-adk';
import { serverForFile, unique } from '../support/server.mjs';

const file = serverForFile();

/** Forwards every request to `target`, keeping each one's `traceparent` (or null). */
async function recording(target) {
  const seen = [];
  const server = createServer(async (request, response) => {
    seen.push(request.headers['traceparent'] ?? null);
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const headers = { ...request.headers };
    delete headers.host;
    delete headers['content-length'];
    const answer = await fetch(`${target}${request.url}`, { method: request.method, headers, body });
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => server.close());
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}`, seen };
}

test('each request carries the active span as traceparent, and nothing without a propagator', async () => {
  const target = file.server.url;
  const proxy = await recording(target);
  const service = new AgentstateSessionService({ baseUrl: proxy.url });
  const app = unique('traced');

  await service.createSession({ appName: app, userId: 'u' });
  assert.deepEqual(proxy.seen, [null], 'no propagator registered: no header');

  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  after(() => {
    propagation.disable();
    context.disable();
  });
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const spanId = '00f067aa0ba902b7';
  const active = trace.setSpanContext(context.active(), { traceId, spanId, traceFlags: TraceFlags.SAMPLED });
  const session = await context.with(active, () => service.createSession({ appName: app, userId: 'u' }));
  await context.with(active, () => service.getSession({ appName: app, userId: 'u', sessionId: session.id }));
  assert.deepEqual(proxy.seen.slice(1), [`00-${traceId}-${spanId}-01`, `00-${traceId}-${spanId}-01`]);
});
