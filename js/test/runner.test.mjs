// ADK-TS's own Runner on AgentstateSessionService stores what it stores on ADK-TS's
// InMemorySessionService (ids and clocks aside), and sixteen runners at once lose no `user:` key.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InMemorySessionService, SequentialAgent } from '@google/adk';

import { comparable, greeter, run, ScopedAgent } from '../support/agents.mjs';
import { serverForFile, unique } from '../support/server.mjs';

const file = serverForFile();

async function both(agentFactory, messages) {
  const stored = [];
  for (const sessionService of [new InMemorySessionService(), file.service]) {
    const appName = unique('runner');
    const session = await sessionService.createSession({ appName, userId: 'u', state: { topic: 'state' } });
    const yielded = await run(sessionService, agentFactory(), { appName, userId: 'u', sessionId: session.id, messages });
    const read = await sessionService.getSession({ appName, userId: 'u', sessionId: session.id });
    stored.push({ session: comparable(read), yielded: yielded.length });
  }
  const [reference, ours] = stored;
  delete reference.session.appName;
  delete ours.session.appName;
  return { reference, ours };
}

test('a BaseAgent writing session, user: and temp: keys over two turns stores the same', async () => {
  const { reference, ours } = await both(() => new ScopedAgent(), ['hello', 'again']);
  assert.deepEqual(ours, reference);
  assert.equal(ours.session.state.turns, 2);
  assert.equal(ours.session.state['user:name'], 'Ann');
  assert.equal(ours.session.state['temp:scratch'], undefined);
  assert.equal(ours.session.events.length, 4);
});

test('an LlmAgent with an instruction template and outputKey stores the same', async () => {
  const agent = () => new SequentialAgent({ name: 'pipeline', subAgents: [new ScopedAgent(), greeter()] });
  const { reference, ours } = await both(agent, ['hi', 'and again']);
  assert.deepEqual(ours, reference);
  assert.match(ours.session.state.greeting, /^said: .*Greet Ann; turns so far: 2\.$/s);
});

test('sixteen runners at once on sixteen sessions of one user keep all sixteen user: keys', async () => {
  const appName = unique('concurrent');
  const sessions = await Promise.all(
    Array.from({ length: 16 }, () => file.service.createSession({ appName, userId: 'u' })),
  );
  await Promise.all(
    sessions.map((session, i) =>
      run(file.service, new ScopedAgent(`writer_${i}`, `user:key_${i}`), {
        appName,
        userId: 'u',
        sessionId: session.id,
        messages: ['go'],
      }),
    ),
  );
  const fresh = await file.service.createSession({ appName, userId: 'u' });
  const kept = Object.keys(fresh.state).filter((k) => k.startsWith('user:key_'));
  assert.equal(kept.length, 16, `kept ${kept.length} of 16: ${kept}`);
});
