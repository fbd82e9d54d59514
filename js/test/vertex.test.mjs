// ADK-TS's own Agent Engine client (`VertexAiSessionService`) against agentstate's managed-service
// surface: the same Runner results as InMemorySessionService, whole long histories, filters, 404s,
// and the same sessions the ADK routes and AgentstateSessionService see.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { createEvent, InMemorySessionService, SequentialAgent } from '@google/adk';

import { AgentstateSessionService } from '../dist/index.js';
import { comparable, greeter, run, ScopedAgent } from '../support/agents.mjs';
import { sharedServer } from '../support/server.mjs';
import { vertexService } from '../support/vertex.mjs';

let server;
let vertex;
let direct;
before(async () => {
  server = await sharedServer();
  vertex = vertexService(server.url);
  direct = new AgentstateSessionService({ baseUrl: server.url });
});
after(async () => server.stop());

/** A fresh engine id (the client takes digits only as an app name). */
function engine() {
  return String(Math.floor(Math.random() * 9e15) + 1e15);
}

test('a Runner through VertexAiSessionService stores what InMemorySessionService stores', async () => {
  const agent = () => new SequentialAgent({ name: 'pipeline', subAgents: [new ScopedAgent(), greeter()] });
  const stored = [];
  for (const [service, appName] of [[new InMemorySessionService(), 'reference'], [vertex, engine()]]) {
    const session = await service.createSession({ appName, userId: 'u', state: { topic: 'state' } });
    await run(service, agent(), { appName, userId: 'u', sessionId: session.id, messages: ['hi', 'again'] });
    const read = comparable(await service.getSession({ appName, userId: 'u', sessionId: session.id }));
    delete read.appName;
    stored.push(read);
  }
  assert.deepEqual(stored[1], stored[0]);
  assert.equal(stored[1].state.turns, 2);
});

test('a session written through the Agent Engine client is the one the ADK routes serve', async () => {
  const appName = engine();
  const session = await vertex.createSession({ appName, userId: 'u', state: { k: 1 } });
  assert.match(session.id, /^\d{19}$/);
  const event = createEvent({ invocationId: 'i1', author: 'user', actions: { stateDelta: { 'user:lang': 'fr', n: 1 } } });
  await vertex.appendEvent({ session, event });
  const seen = await direct.getSession({ appName, userId: 'u', sessionId: session.id });
  assert.deepEqual({ ...seen.state }, { k: 1, 'user:lang': 'fr', n: 1 });
  assert.equal(seen.events[0].id, event.id);
  assert.equal(seen.events[0].timestamp, event.timestamp, 'the client’s millisecond time, kept');
  // …and continued there, read back through the Agent Engine client.
  await direct.appendEvent({ session: seen, event: createEvent({ invocationId: 'i2', author: 'agent', actions: { stateDelta: { n: 2 } } }) });
  const back = await vertex.getSession({ appName, userId: 'u', sessionId: session.id });
  assert.deepEqual(back.events.map((e) => e.invocationId), ['i1', 'i2']);
  assert.equal(back.state.n, 2);
});

test('rawEvent comes back as the client sent it: its keys, its millisecond time', async () => {
  const appName = engine();
  const service = vertexService(server.url);
  const sent = [];
  const append = service.sessions.events.append.bind(service.sessions.events);
  service.sessions.events.append = (params) => {
    sent.push(JSON.parse(JSON.stringify(params.config.rawEvent)));
    return append(params);
  };
  const session = await service.createSession({ appName, userId: 'u' });
  await run(service, new SequentialAgent({ name: 'pipeline', subAgents: [new ScopedAgent(), greeter()] }), {
    appName, userId: 'u', sessionId: session.id, messages: ['hi'],
  });
  await service.appendEvent({
    session,
    event: createEvent({ invocationId: 'js', author: 'node', output: { k: 1 }, nodeInfo: { path: 'a/b' }, customMetadata: { mine: true } }),
  });
  const path = `/v1beta1/projects/my-project/locations/us-central1/reasoningEngines/${appName}/sessions/${session.id}/events`;
  const listed = await (await fetch(`${server.url}${path}`)).json();
  assert.equal(listed.sessionEvents.length, sent.length);
  listed.sessionEvents.forEach((resource, i) => assert.deepEqual(resource.rawEvent, sent[i], `event ${i}`));
  assert.ok(sent.every((raw) => raw.timestamp > 1e12), 'the client writes milliseconds');
  // The ADK routes still show agentstate's time in seconds, and no metadata the client did not write.
  const shown = await direct.getSession({ appName, userId: 'u', sessionId: session.id });
  assert.deepEqual(shown.events.map((e) => e.timestamp), sent.map((raw) => raw.timestamp));
  assert.deepEqual(shown.events.map((e) => e.customMetadata), sent.map((raw) => raw.customMetadata));
});

test('a long history comes back whole, and timestamp filters keep working', async () => {
  const appName = engine();
  const session = await vertex.createSession({ appName, userId: 'u' });
  const times = [];
  for (let i = 0; i < 130; i++) {
    const event = createEvent({ invocationId: `i${i}`, author: 'user', actions: { stateDelta: { n: i } } });
    await vertex.appendEvent({ session, event });
    times.push(event.timestamp);
  }
  const whole = await vertex.getSession({ appName, userId: 'u', sessionId: session.id });
  assert.equal(whole.events.length, 130, 'not cut at a first page of 100');
  assert.deepEqual(whole.events.map((e) => e.invocationId), times.map((_, i) => `i${i}`));
  const since = await vertex.getSession({ appName, userId: 'u', sessionId: session.id, config: { afterTimestamp: times[120] } });
  assert.deepEqual(since.events.map((e) => e.invocationId), times.slice(120).map((_, i) => `i${120 + i}`));
  const recent = await vertex.getSession({ appName, userId: 'u', sessionId: session.id, config: { numRecentEvents: 3 } });
  assert.deepEqual(recent.events.map((e) => e.invocationId), ['i127', 'i128', 'i129']);
});

test('user filters, events without ids, deletes and real 404s', async () => {
  const appName = engine();
  const mine = await vertex.createSession({ appName, userId: 'u' });
  await vertex.createSession({ appName, userId: 'other "quoted" user' });
  const listed = await vertex.listSessions({ appName, userId: 'u' });
  assert.deepEqual(listed.sessions.map((s) => s.id), [mine.id]);
  const quoted = await vertex.listSessions({ appName, userId: 'other "quoted" user' });
  assert.equal(quoted.totalItems, 1);
  // An event appended without an id (and without rawEvent) gets one.
  await vertex.sessions.events.append({
    name: `reasoningEngines/${appName}/sessions/${mine.id}`,
    author: 'user',
    invocationId: 'bare',
    timestamp: new Date().toISOString(),
    config: { content: { role: 'user', parts: [{ text: 'no id' }] } },
  });
  const read = await vertex.getSession({ appName, userId: 'u', sessionId: mine.id });
  assert.equal(read.events.length, 1);
  assert.ok(read.events[0].id, 'the server named it');
  assert.equal(read.events[0].content.parts[0].text, 'no id');
  assert.equal(await vertex.getSession({ appName, userId: 'u', sessionId: '1234567890123456789' }), undefined);
  await assert.rejects(vertex.getSession({ appName, userId: 'someone-else', sessionId: mine.id }), /does not belong/);
  await vertex.deleteSession({ appName, userId: 'u', sessionId: mine.id });
  assert.equal(await vertex.getSession({ appName, userId: 'u', sessionId: mine.id }), undefined);
  assert.equal(await direct.getSession({ appName, userId: 'u', sessionId: mine.id }), undefined);
});
