// Two turns of ADK for TypeScript's Runner on AgentstateSessionService, against the server at
// argv[2], from the installed tarballs: the state and events it stored read back.
import assert from 'node:assert/strict';

import { BaseAgent, createEvent, createEventActions, Runner } from '@google/adk';
import { AgentstateSessionService } from 'agentstate-adk';

class Counter extends BaseAgent {
  async *runAsyncImpl(context) {
    const turns = (context.session.state.turns ?? 0) + 1;
    yield createEvent({
      invocationId: context.invocationId,
      author: this.name,
      content: { role: 'model', parts: [{ text: `turn ${turns}` }] },
      actions: createEventActions({ stateDelta: { turns, 'user:name': 'Ann' } }),
    });
  }

  async *runLiveImpl() {
    throw new Error('not live');
  }
}

const sessionService = new AgentstateSessionService({ baseUrl: process.argv[2] });
const runner = new Runner({ appName: 'dist', agent: new Counter({ name: 'counter' }), sessionService });
const session = await sessionService.createSession({ appName: 'dist', userId: 'u' });
for (const text of ['hello', 'again']) {
  for await (const _ of runner.runAsync({ userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text }] } })) {
    // the events are stored as they come
  }
}
const stored = await sessionService.getSession({ appName: 'dist', userId: 'u', sessionId: session.id });
assert.deepEqual(stored.state, { turns: 2, 'user:name': 'Ann' });
assert.deepEqual(stored.events.map((e) => e.author), ['user', 'counter', 'user', 'counter']);
console.log(`ADK for TypeScript: 2 turns stored, state ${JSON.stringify(stored.state)}`);
