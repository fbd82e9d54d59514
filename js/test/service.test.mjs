// AgentstateSessionService against a real agentstate server: ADK-TS's session contract, agentstate's
// guarantees (stale handles refused, retries stored once, windows on the server), typed errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';

import { createEvent, InMemorySessionService } from '@google/adk';

import {
  AgentstateAlreadyExistsError,
  AgentstateAuthError,
  AgentstateInvalidRequestError,
  AgentstateNotFoundError,
  AgentstateSessionService,
  AgentstateStaleSessionError,
  AgentstateTimeoutError,
  AgentstateUnavailableError,
  msToSeconds,
  secondsToMs,
} from 'agentstate-adk'; // the package by its name: its exports map, as users import it
import { binary, serverForFile, startServer, unique } from '../support/server.mjs';

const file = serverForFile();

function userEvent(invocationId, delta, extra = {}) {
  return createEvent({ invocationId, author: 'user', actions: { stateDelta: delta }, ...extra });
}

test('sessions round-trip with scoped state, as on InMemorySessionService', async () => {
  const app = unique('app');
  for (const svc of [file.service, new InMemorySessionService()]) {
    const name = svc.constructor.name;
    const s1 = await svc.createSession({ appName: app, userId: 'u', sessionId: 's1', state: { x: 1 } });
    assert.equal(s1.id, 's1');
    assert.deepEqual({ ...s1.state }, { x: 1 }, name);
    const delta = { 'app:theme': 'dark', 'user:lang': 'fr', n: 2, 'temp:t': true };
    await svc.appendEvent({ session: s1, event: userEvent('i1', delta) });
    assert.deepEqual({ ...s1.state }, { x: 1, 'app:theme': 'dark', 'user:lang': 'fr', n: 2 }, `${name}: temp: keys stay out`);
    const s2 = await svc.createSession({ appName: app, userId: 'u', sessionId: 's2' });
    assert.deepEqual({ ...s2.state }, { 'app:theme': 'dark', 'user:lang': 'fr' }, name);
    const other = await svc.createSession({ appName: app, userId: 'v' });
    assert.deepEqual({ ...other.state }, { 'app:theme': 'dark' }, name);
    const read = await svc.getSession({ appName: app, userId: 'u', sessionId: 's1' });
    assert.equal(read.events.length, 1, name);
    assert.deepEqual({ ...read.events[0].actions.stateDelta }, { 'app:theme': 'dark', 'user:lang': 'fr', n: 2 }, name);
    assert.equal(read.lastUpdateTime, s1.lastUpdateTime, name);
    assert.equal(await svc.getSession({ appName: app, userId: 'u', sessionId: 'nope' }), undefined, name);
    await svc.deleteSession({ appName: app, userId: 'u', sessionId: 's2' });
    assert.equal(await svc.getSession({ appName: app, userId: 'u', sessionId: 's2' }), undefined, name);
    await svc.deleteSession({ appName: app, userId: 'u', sessionId: 's2' }); // twice is fine
  }
});

test("a create's app: and user: keys are scoped, as ADK for Python scopes them", async () => {
  // ADK-TS's InMemorySessionService keeps them in the new session only; agentstate shares them.
  const app = unique('app');
  await file.service.createSession({ appName: app, userId: 'u', state: { 'app:theme': 'dark', 'user:lang': 'fr', own: 1 } });
  const next = await file.service.createSession({ appName: app, userId: 'u' });
  assert.deepEqual({ ...next.state }, { 'app:theme': 'dark', 'user:lang': 'fr' });
});

test('times are exact: milliseconds in, the same milliseconds out; microseconds read as fractions', async () => {
  const app = unique('app');
  const session = await file.service.createSession({ appName: app, userId: 'u' });
  const at = Math.floor(session.lastUpdateTime) + 5_000.125 - (Math.floor(session.lastUpdateTime) % 1000);
  const event = userEvent('i1', { a: 1 }, { timestamp: at });
  await file.service.appendEvent({ session, event });
  assert.equal(event.timestamp, at);
  assert.equal(session.lastUpdateTime, at);
  const read = await file.service.getSession({ appName: app, userId: 'u', sessionId: session.id });
  assert.equal(read.events[0].timestamp, at);
  assert.equal(read.lastUpdateTime, at);
  // Every microsecond converts both ways unchanged.
  for (const micros of [0, 1, 999, 1_795_700_772_921_784, 1_795_700_772_921_000, 4_102_444_800_000_001]) {
    const seconds = micros / 1e6;
    assert.equal(msToSeconds(secondsToMs(seconds)), seconds, `${micros} µs`);
  }
  assert.equal(secondsToMs(1_795_700_772.921784), 1_795_700_772_921.784);
});

test('ADK-TS-only event fields survive a round trip', async () => {
  const app = unique('app');
  const session = await file.service.createSession({ appName: app, userId: 'u' });
  const event = createEvent({
    invocationId: 'i1',
    author: 'node',
    output: { someKey: { deepKey: [1, 'two'] } },
    route: ['left', 2, true],
    nodeInfo: { path: 'wf/a', outputFor: ['wf'] },
    isolationScope: 'scope-1',
    customMetadata: { camelCase: { innerKey: 1 } },
    content: { role: 'model', parts: [{ text: 'hi' }, { functionCall: { id: 'c1', name: 'f', args: { aB: 1 } } }] },
    actions: { stateDelta: { camelKey: { innerCamel: 1 } }, agentState: { someNode: { x: 1 } } },
  });
  await file.service.appendEvent({ session, event });
  const [read] = (await file.service.getSession({ appName: app, userId: 'u', sessionId: session.id })).events;
  for (const field of ['output', 'route', 'nodeInfo', 'isolationScope', 'customMetadata', 'content', 'author', 'id']) {
    assert.deepEqual(read[field], event[field], field);
  }
  assert.deepEqual(read.actions.stateDelta, { camelKey: { innerCamel: 1 } });
  assert.deepEqual(read.actions.agentState, { someNode: { x: 1 } });
});

test('windows are answered by the server', async () => {
  const app = unique('app');
  const session = await file.service.createSession({ appName: app, userId: 'u' });
  const times = [];
  for (let i = 0; i < 5; i++) {
    const event = userEvent(`i${i}`, { n: i });
    await file.service.appendEvent({ session, event });
    times.push(event.timestamp);
  }
  const key = { appName: app, userId: 'u', sessionId: session.id };
  const recent = await file.service.getSession({ ...key, config: { numRecentEvents: 2 } });
  assert.deepEqual(recent.events.map((e) => e.invocationId), ['i3', 'i4']);
  const since = await file.service.getSession({ ...key, config: { afterTimestamp: times[2] } });
  assert.deepEqual(since.events.map((e) => e.invocationId), ['i2', 'i3', 'i4'], 'an event at exactly the bound is in');
  const none = await file.service.getSession({ ...key, config: { numRecentEvents: 0 } });
  assert.deepEqual(none.events, []);
  assert.equal(none.state.n, 4);
});

test('lists in ADK-TS shape: order, limit, offset, page; one user or all', async () => {
  const app = unique('app');
  const made = [];
  for (const [user, id] of [['u', 'a'], ['u', 'b'], ['v', 'c'], ['u', 'd']]) {
    const s = await file.service.createSession({ appName: app, userId: user, sessionId: id });
    made.push(s);
  }
  // 'a' updated last.
  await file.service.appendEvent({ session: made[0], event: userEvent('i', { k: 1 }) });
  const all = await file.service.listSessions({ appName: app, userId: 'u' });
  assert.equal(all.totalItems, 3);
  assert.equal(all.page, 1);
  assert.equal(all.limit, 3);
  assert.equal(all.totalPages, 1);
  assert.ok(all.sessions.every((s) => s.events.length === 0));
  const desc = await file.service.listSessions({ appName: app, userId: 'u', order: 'desc' });
  assert.deepEqual(desc.sessions.map((s) => s.id), ['a', 'd', 'b']);
  const page2 = await file.service.listSessions({ appName: app, userId: 'u', order: 'asc', limit: 2, page: 2 });
  assert.deepEqual(page2.sessions.map((s) => s.id), ['a']);
  assert.deepEqual([page2.page, page2.limit, page2.totalItems, page2.totalPages], [2, 2, 3, 2]);
  const offset = await file.service.listSessions({ appName: app, userId: 'u', order: 'asc', limit: 1, offset: 1 });
  assert.deepEqual(offset.sessions.map((s) => s.id), ['d']);
  assert.equal(offset.page, 2);
  const everyone = await file.service.listSessions({ appName: app });
  assert.deepEqual(everyone.sessions.map((s) => s.id).sort(), ['a', 'b', 'c', 'd']);
  const empty = await file.service.listSessions({ appName: app, userId: 'nobody', limit: 10 });
  assert.deepEqual([empty.sessions.length, empty.totalItems, empty.totalPages], [0, 0, 0]);
  const none = await file.service.listSessions({ appName: app, userId: 'u', limit: 0 });
  assert.deepEqual([none.sessions.length, none.page, none.totalItems, none.totalPages], [0, 1, 3, 0]);
  const rest = await file.service.listSessions({ appName: app, userId: 'u', order: 'desc', offset: 1 });
  assert.deepEqual(rest.sessions.map((s) => s.id), ['d', 'b']);
  assert.deepEqual([rest.page, rest.limit, rest.totalItems], [1, 3, 3]);
});

test("agentstate's orderBy and filter: by creation, by state, refused with where", async () => {
  const app = unique('app');
  const made = [];
  for (const [id, stage] of [['a', 1], ['b', 2], ['c', 1]]) {
    made.push(await file.service.createSession({ appName: app, userId: 'u', sessionId: id, state: { stage } }));
  }
  await file.service.appendEvent({ session: made[0], event: userEvent('i', { note: 'a is now the newest by update' }) });
  const byUpdate = await file.service.listSessions({ appName: app, userId: 'u', order: 'desc' });
  assert.deepEqual(byUpdate.sessions.map((s) => s.id), ['a', 'c', 'b']);
  const byCreation = await file.service.listSessions({ appName: app, userId: 'u', orderBy: 'create_time desc' });
  assert.deepEqual(byCreation.sessions.map((s) => s.id), ['c', 'b', 'a']);
  const staged = await file.service.listSessions({ appName: app, orderBy: 'create_time', filter: 'state.stage=1', limit: 10 });
  assert.deepEqual([staged.sessions.map((s) => s.id), staged.totalItems], [['a', 'c'], 2]);
  await assert.rejects(
    file.service.listSessions({ appName: app, filter: 'state.stage=1 OR state.stage=2' }),
    (e) => e instanceof AgentstateInvalidRequestError && /character 15/.test(e.message),
  );
});

test('a page of a long list is one request: the server orders, skips, cuts and counts', async () => {
  const app = unique('app');
  for (let i = 0; i < 30; i++) {
    await file.service.createSession({ appName: app, userId: 'u', sessionId: `s${String(i).padStart(2, '0')}` });
  }
  const asked = [];
  const original = globalThis.fetch;
  globalThis.fetch = (url, init) => {
    asked.push(String(url));
    return original(url, init);
  };
  let page;
  try {
    page = await file.service.listSessions({ appName: app, userId: 'u', order: 'desc', limit: 4, page: 3 });
  } finally {
    globalThis.fetch = original;
  }
  assert.equal(asked.length, 1, asked.join('\n'));
  assert.match(asked[0], /pageSize=4/);
  assert.match(asked[0], /offset=8/);
  assert.deepEqual(page.sessions.map((s) => s.id), ['s21', 's20', 's19', 's18']);
  assert.deepEqual([page.page, page.limit, page.totalItems, page.totalPages], [3, 4, 30, 8]);
  // Without a limit, the server's pages are followed, in the order asked.
  const all = await file.service.listSessions({ appName: app, userId: 'u', order: 'desc' });
  assert.equal(all.sessions.length, 30);
  assert.equal(all.sessions[0].id, 's29');
});

test('a stale handle is refused, never reloaded, and writes nothing', async () => {
  const app = unique('app');
  const first = await file.service.createSession({ appName: app, userId: 'u', sessionId: 's' });
  const second = await file.service.getSession({ appName: app, userId: 'u', sessionId: 's' });
  await file.service.appendEvent({ session: first, event: userEvent('i1', { 'user:a': 1 }) });
  await assert.rejects(
    file.service.appendEvent({ session: second, event: userEvent('i2', { 'user:b': 2 }) }),
    (e) => e instanceof AgentstateStaleSessionError && e.status === 409,
  );
  assert.equal(second.events.length, 0, 'the handle is left as it was');
  const stored = await file.service.getSession({ appName: app, userId: 'u', sessionId: 's' });
  assert.equal(stored.events.length, 1);
  assert.equal(stored.state['user:b'], undefined);
});

test('a retried append is stored once', async () => {
  const app = unique('app');
  const session = await file.service.createSession({ appName: app, userId: 'u' });
  const handle = await file.service.getSession({ appName: app, userId: 'u', sessionId: session.id });
  const event = userEvent('i1', { count: 1 });
  await file.service.appendEvent({ session, event });
  // The same event again, as after an answer lost on the way back, through the earlier handle.
  const again = await file.service.appendEvent({ session: handle, event: { ...event } });
  assert.equal(again.id, event.id);
  await file.service.appendEvent({ session, event: { ...event } });
  const stored = await file.service.getSession({ appName: app, userId: 'u', sessionId: session.id });
  assert.equal(stored.events.length, 1);
  assert.equal(session.events.length, 1);
});

test('partial events are not stored', async () => {
  const app = unique('app');
  const session = await file.service.createSession({ appName: app, userId: 'u' });
  await file.service.appendEvent({ session, event: userEvent('i1', { a: 1 }, { partial: true }) });
  const stored = await file.service.getSession({ appName: app, userId: 'u', sessionId: session.id });
  assert.equal(stored.events.length, 0);
  assert.equal(stored.state.a, undefined);
});

test('refusals are typed: 409 on a taken id, 404 on a missing session, 400 on a bad id', async () => {
  const app = unique('app');
  await file.service.createSession({ appName: app, userId: 'u', sessionId: 'taken' });
  await assert.rejects(
    file.service.createSession({ appName: app, userId: 'u', sessionId: 'taken' }),
    (e) => e instanceof AgentstateAlreadyExistsError && e.status === 409,
  );
  const ghost = { id: 'ghost', appName: app, userId: 'u', state: {}, events: [], lastUpdateTime: 0 };
  await assert.rejects(
    file.service.appendEvent({ session: ghost, event: userEvent('i', { a: 1 }) }),
    (e) => e instanceof AgentstateNotFoundError && e.status === 404,
  );
  await assert.rejects(
    file.service.createSession({ appName: app, userId: 'u', sessionId: '../etc' }),
    (e) => e instanceof AgentstateInvalidRequestError && e.status === 400,
  );
  assert.equal((await file.service.listSessions({ appName: app, userId: 'u' })).totalItems, 1, 'nothing written');
});

test('tokens are sent, refusals are typed, and the token never shows', { skip: !binary() && 'no agentstate binary' }, async () => {
  const token = 'test-token-0123456789abcdef';
  const own = await startServer({ tokens: [{ token, apps: ['app'], users: ['u'] }] });
  try {
    const ok = new AgentstateSessionService({ baseUrl: own.url, token });
    await ok.createSession({ appName: 'app', userId: 'u', sessionId: 's' });
    await assert.rejects(ok.createSession({ appName: 'app', userId: 'other' }), (e) => {
      assert.ok(e instanceof AgentstateAuthError);
      assert.equal(e.status, 403);
      assert.ok(!e.message.includes(token) && !inspect(e).includes(token));
      return true;
    });
    const none = new AgentstateSessionService({ baseUrl: own.url, token: '' });
    await assert.rejects(none.getSession({ appName: 'app', userId: 'u', sessionId: 's' }), (e) => {
      return e instanceof AgentstateAuthError && e.status === 401;
    });
    const wrong = new AgentstateSessionService({ baseUrl: own.url, token: 'not-a-token-of-this-server' });
    await assert.rejects(wrong.listSessions({ appName: 'app', userId: 'u' }), AgentstateAuthError);
    for (const shown of [inspect(ok), inspect(ok, { showHidden: true, depth: 10 }), JSON.stringify(ok), String(ok)]) {
      assert.ok(!shown.includes(token), shown);
    }
  } finally {
    await own.stop();
  }
});

test('bad URLs, a server that is down, and one that does not answer in time', async () => {
  for (const bad of ['', 'localhost:8000', 'ftp://host', 'http://']) {
    assert.throws(() => new AgentstateSessionService({ baseUrl: bad }), TypeError, bad);
  }
  assert.equal(new AgentstateSessionService({ baseUrl: 'agentstate://127.0.0.1:9/' }).baseUrl, 'http://127.0.0.1:9');
  assert.equal(new AgentstateSessionService({ baseUrl: 'agentstate+https://h/x/' }).baseUrl, 'https://h/x');
  assert.throws(() => new AgentstateSessionService({ baseUrl: 'http://h', timeoutMs: 0 }), RangeError);

  const net = await import('node:net');
  const closed = net.createServer();
  await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = closed.address().port;
  await new Promise((resolve) => closed.close(resolve));
  const down = new AgentstateSessionService({ baseUrl: `http://127.0.0.1:${port}` });
  await assert.rejects(down.getSession({ appName: 'a', userId: 'u', sessionId: 's' }), (e) => {
    return e instanceof AgentstateUnavailableError && /unreachable/.test(e.message);
  });

  // Accepts connections and never answers.
  const silent = net.createServer(() => {});
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const slow = new AgentstateSessionService({ baseUrl: `http://127.0.0.1:${silent.address().port}`, timeoutMs: 200 });
    await assert.rejects(slow.listSessions({ appName: 'a', userId: 'u' }), (e) => {
      return e instanceof AgentstateTimeoutError && e instanceof AgentstateUnavailableError && /200 ms/.test(e.message);
    });
  } finally {
    silent.close();
    for (const socket of []) socket.destroy();
  }
});

test('a connection lost after sending is retried for reads and appends, never for creates', async () => {
  const net = await import('node:net');
  let connections = 0;
  // Reads the request, then drops the connection without an answer.
  const rude = net.createServer((socket) => {
    connections++;
    socket.once('data', () => socket.destroy());
  });
  await new Promise((resolve) => rude.listen(0, '127.0.0.1', resolve));
  const svc = new AgentstateSessionService({ baseUrl: `http://127.0.0.1:${rude.address().port}` });
  try {
    await assert.rejects(svc.getSession({ appName: 'a', userId: 'u', sessionId: 's' }), AgentstateUnavailableError);
    assert.equal(connections, 3, 'a read is tried three times');
    connections = 0;
    await assert.rejects(svc.createSession({ appName: 'a', userId: 'u' }), AgentstateUnavailableError);
    assert.equal(connections, 1, 'a create could be stored twice: tried once');
    connections = 0;
    const session = { id: 's', appName: 'a', userId: 'u', state: {}, events: [], lastUpdateTime: 0 };
    await assert.rejects(svc.appendEvent({ session, event: userEvent('i', { a: 1 }) }), AgentstateUnavailableError);
    assert.equal(connections, 3, 'an append carries its id: tried three times');
  } finally {
    rude.close();
  }
});

test('user and app state are read without a session', async () => {
  const app = unique('app');
  assert.deepEqual(await file.service.getUserState({ appName: app, userId: 'u' }), {});
  const session = await file.service.createSession({ appName: app, userId: 'u', state: { 'user:lang': 'fr', 'app:theme': 'dark', own: 1 } });
  await file.service.deleteSession({ appName: app, userId: 'u', sessionId: session.id });
  assert.deepEqual(await file.service.getUserState({ appName: app, userId: 'u' }), { lang: 'fr' }, 'outlives its sessions');
  assert.deepEqual(await file.service.getAppState({ appName: app }), { theme: 'dark' });
  await assert.rejects(file.service.getUserState({ appName: app, userId: '../x' }), AgentstateInvalidRequestError);
});
