// ADK-TS's dev server (`AdkApiServer` of @google/adk-devtools, what `adk api_server` runs), built in
// code with AgentstateSessionService: its session routes and /run keep their sessions in agentstate.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { AdkApiServer } from '@google/adk-devtools';

import { AgentstateSessionService } from '../dist/index.js';
import { ScopedAgent } from '../support/agents.mjs';
import { sharedServer, unique } from '../support/server.mjs';

let server;
let service;
let devServer;
let devUrl;
const appName = unique('devapp').replace(/-/g, '_');

/** One agent, by the app's name, as the dev server's loader hands agents out. */
const loader = {
  listAgents: async () => [appName],
  listApps: async () => [appName],
  listLoadFailures: async () => [],
  getAgentFile: async () => ({
    load: async () => new ScopedAgent(),
    loadAgent: async () => new ScopedAgent(),
    dispose: async () => {},
    [Symbol.asyncDispose]: async () => {},
  }),
};

before(async () => {
  server = await sharedServer();
  service = new AgentstateSessionService({ baseUrl: server.url });
  devServer = new AdkApiServer({ host: '127.0.0.1', port: 0, sessionService: service, agentLoader: loader, logLevel: 3 });
  await devServer.start();
  devUrl = `http://127.0.0.1:${devServer.server.address().port}`;
});
after(async () => {
  await devServer.stop();
  await server.stop();
});

async function call(method, path, body) {
  const response = await fetch(`${devUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

test("the dev server's session routes and /run keep their sessions in agentstate", async () => {
  const base = `/apps/${appName}/users/u/sessions`;
  const created = await call('POST', `${base}/chat`, { state: { topic: 'x' } });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.equal((await call('POST', `${base}/chat`, {})).status, 400, 'taken');
  const run = await call('POST', '/run', {
    appName,
    userId: 'u',
    sessionId: 'chat',
    newMessage: { role: 'user', parts: [{ text: 'hello' }] },
  });
  assert.equal(run.status, 200, JSON.stringify(run.body));
  assert.equal(run.body.at(-1).content.parts[0].text, 'turn 1');
  // What the dev server shows is what agentstate stores.
  const shown = await call('GET', `${base}/chat`);
  const stored = await service.getSession({ appName, userId: 'u', sessionId: 'chat' });
  assert.equal(shown.status, 200);
  assert.deepEqual(shown.body.state, { ...stored.state });
  assert.deepEqual({ ...stored.state }, { topic: 'x', turns: 1, last: 'turn 1', 'user:name': 'Ann' });
  assert.deepEqual(shown.body.events.map((e) => e.id), stored.events.map((e) => e.id));
  const listed = await call('GET', base);
  assert.deepEqual(listed.body.sessions.map((s) => s.id), ['chat']);
  assert.equal(listed.body.totalItems, 1);
  assert.equal((await call('DELETE', `${base}/chat`)).status, 204);
  assert.equal(await service.getSession({ appName, userId: 'u', sessionId: 'chat' }), undefined);
  assert.equal((await call('GET', `${base}/chat`)).status, 404);
});
