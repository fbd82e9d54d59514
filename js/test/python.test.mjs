// One session, two languages: written by ADK for Python through agentstate's Python package, read and
// continued by ADK for TypeScript through this one, and the reverse. Times keep their microseconds;
// ADK-TS-only fields neither break ADK for Python nor get lost.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createEvent } from '@google/adk';

import { adkPython, python } from '../support/python.mjs';
import { serverForFile, unique } from '../support/server.mjs';

const skip = !adkPython() && 'no ADK for Python here (run `bash .ci/setup-adk`)';
const file = serverForFile();

const PY_WRITE = `
from agentstate_adk import AgentstateSessionService
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

async def main():
    svc = AgentstateSessionService(ARGS["url"])
    s = await svc.create_session(app_name=ARGS["app"], user_id="u", session_id="py", state={"from": "python"})
    e = Event(invocation_id="py-1", author="user", timestamp=ARGS["at"],
              content=types.Content(role="user", parts=[types.Part(text="bonjour")]),
              actions=EventActions(state_delta={"user:lang": "fr", "n": 1}))
    await svc.append_event(s, e)
    print(json.dumps({"timestamp": e.timestamp, "last": s.last_update_time}))
asyncio.run(main())
`;

const PY_READ = `
from agentstate_adk import AgentstateSessionService

async def main():
    svc = AgentstateSessionService(ARGS["url"])
    s = await svc.get_session(app_name=ARGS["app"], user_id="u", session_id=ARGS["id"])
    out = {"state": dict(s.state), "events": [{"author": e.author, "timestamp": e.timestamp, "text": e.content.parts[0].text if e.content else None,
            "output": e.output, "isolation_scope": e.isolation_scope} for e in s.events]}
    # ...and continued from Python.
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    await svc.append_event(s, Event(invocation_id="py-2", author="user", actions=EventActions(state_delta={"n": 3})))
    print(json.dumps(out))
asyncio.run(main())
`;

test('a session ADK for Python wrote is read and continued by ADK for TypeScript', { skip }, async () => {
  const app = unique('interop');
  // A time with microseconds, as Python's clock gives them (and ahead of the session's creation).
  const at = Math.floor(Date.now() / 1000) + 60 + 0.123456;
  const written = await python(PY_WRITE, { url: file.server.url, app, at });
  const session = await file.service.getSession({ appName: app, userId: 'u', sessionId: 'py' });
  assert.deepEqual({ ...session.state }, { from: 'python', 'user:lang': 'fr', n: 1 });
  assert.equal(session.events[0].timestamp, Math.round(written.timestamp * 1e6) / 1000, 'microseconds kept, as milliseconds');
  assert.equal(session.events[0].timestamp % 1 !== 0, true);
  assert.equal(session.lastUpdateTime, Math.round(written.last * 1e6) / 1000);
  assert.equal(session.events[0].content.parts[0].text, 'bonjour');
  await file.service.appendEvent({
    session,
    event: createEvent({ invocationId: 'ts-1', author: 'agent', actions: { stateDelta: { n: 2 } } }),
  });
  const again = await file.service.getSession({ appName: app, userId: 'u', sessionId: 'py' });
  assert.deepEqual(again.events.map((e) => e.invocationId), ['py-1', 'ts-1']);
  assert.equal(again.state.n, 2);
});

test('a session ADK for TypeScript wrote, with its own fields, is read and continued by ADK for Python', { skip }, async () => {
  const app = unique('interop');
  const session = await file.service.createSession({ appName: app, userId: 'u', state: { from: 'ts' } });
  const event = createEvent({
    invocationId: 'ts-1',
    author: 'node',
    content: { role: 'model', parts: [{ text: 'hello' }] },
    output: { answer: { deepKey: 42 } },
    route: ['yes'],
    nodeInfo: { path: 'wf/a' },
    isolationScope: 'scope-1',
    actions: { stateDelta: { 'user:lang': 'en', n: 1 } },
  });
  await file.service.appendEvent({ session, event });
  const read = await python(PY_READ, { url: file.server.url, app, id: session.id });
  assert.deepEqual(read.state, { from: 'ts', 'user:lang': 'en', n: 1 });
  const [pyEvent] = read.events;
  assert.equal(pyEvent.author, 'node');
  assert.equal(pyEvent.text, 'hello');
  assert.deepEqual(pyEvent.output, { answer: { deepKey: 42 } });
  assert.equal(pyEvent.isolation_scope, 'scope-1');
  assert.equal(Math.round(pyEvent.timestamp * 1e6) / 1000, event.timestamp, 'the same instant in both clocks');
  // Python's continuation, and the TS-only fields still there for TS.
  const back = await file.service.getSession({ appName: app, userId: 'u', sessionId: session.id });
  assert.deepEqual(back.events.map((e) => e.invocationId), ['ts-1', 'py-2']);
  assert.equal(back.state.n, 3);
  assert.deepEqual(back.events[0].route, ['yes']);
  assert.deepEqual(back.events[0].nodeInfo, { path: 'wf/a' });
  assert.deepEqual(back.events[0].output, { answer: { deepKey: 42 } });
});
