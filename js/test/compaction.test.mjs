// Compacted loads for ADK for TypeScript: an agent whose `contextCompactors` summarise its history
// (`TokenBasedContextCompactor`, ADK's `LlmSummarizer`) sends a scripted model the same requests
// over `AgentstateSessionService({ compactedLoads: true })` as over `InMemorySessionService`,
// while the loads answer a part of the history. (No long-running call is summarised before its
// answer: ADK-TS 2.0 itself then raises "No function call event found", whatever the store.)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import {
  BaseLlm,
  FunctionTool,
  InMemorySessionService,
  LlmAgent,
  LlmSummarizer,
  Runner,
  TokenBasedContextCompactor,
} from '@google/adk';

import { AgentstateSessionService } from '../dist/index.js';
import { sharedServer, unique } from '../support/server.mjs';

let server;
before(async () => {
  server = await sharedServer();
});
after(async () => {
  await server.stop();
});

/** Every event a millisecond after the one before: ADK-TS keeps times in whole milliseconds, and
 * its in-memory service then drops an event of the same millisecond as a summary's end as
 * covered (the next user message among them), where agentstate's store places it a microsecond
 * later. Spaced, the two runs are comparable. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 2));

/** Call ids are random: a request names them by order of appearance. */
function namedInOrder(text) {
  const ids = new Map();
  return text.replace(/adk-[0-9a-f-]{36}/g, (id) => {
    if (!ids.has(id)) ids.set(id, `call${ids.size}`);
    return ids.get(id);
  });
}

/** A summary for a summarising prompt, a `remember` call for text, "done" after a response; every
 * request recorded. */
class Scripted extends BaseLlm {
  constructor() {
    super({ model: 'scripted' });
    this.requests = [];
  }

  async *generateContentAsync(request) {
    await tick();
    // Compared as values: key order differs between a stored and an in-memory event.
    this.requests.push(JSON.parse(namedInOrder(JSON.stringify(request.contents))));
    const first = request.contents[0]?.parts?.[0]?.text ?? '';
    if (first.startsWith('The following is a conversation history')) {
      yield { content: { role: 'model', parts: [{ text: `summary of ${namedInOrder(first).length} characters` }] } };
      return;
    }
    const last = request.contents.at(-1);
    if (last.parts.some((p) => p.functionResponse)) {
      yield { content: { role: 'model', parts: [{ text: 'done' }] } };
      return;
    }
    const said = last.parts.map((p) => p.text ?? '').join('');
    yield { content: { role: 'model', parts: [{ functionCall: { name: 'remember', args: { what: said } } }] } };
  }

  async connect() {
    throw new Error('not live');
  }
}

const remember = new FunctionTool({
  name: 'remember',
  description: 'Remembers what the user said.',
  execute: async (input) => {
    await tick();
    return { remembered: input };
  },
});
/** Fifteen turns of a tool call and an answer. */
async function converse(sessionService, appName) {
  const model = new Scripted();
  const compactor = new TokenBasedContextCompactor({
    tokenThreshold: 60,
    eventRetentionSize: 3,
    summarizer: new LlmSummarizer({ llm: model }),
  });
  const agent = new LlmAgent({ name: 'helper', model, tools: [remember], contextCompactors: [compactor] });
  const runner = new Runner({ appName, agent, sessionService });
  const session = await sessionService.createSession({ appName, userId: 'u' });
  for (let n = 1; n <= 15; n++) {
    const newMessage = { role: 'user', parts: [{ text: `hi ${n}` }] };
    for await (const _ of runner.runAsync({ userId: 'u', sessionId: session.id, newMessage }));
    await tick();
  }
  return { requests: model.requests, sessionId: session.id };
}

test('the model is sent what it is sent over the whole history, from a part of it', async () => {
  const expected = await converse(new InMemorySessionService(), 'compacting');
  const appName = unique('compacting');
  const service = new AgentstateSessionService({ baseUrl: server.url, compactedLoads: true });
  const got = await converse(service, appName);
  assert.ok(expected.requests.some((r) => JSON.stringify(r).includes('summary of')), 'the history was compacted');
  assert.equal(got.requests.length, expected.requests.length);
  got.requests.forEach((request, i) => assert.deepStrictEqual(request, expected.requests[i], `request ${i}`));

  const path = `${server.url}/apps/${appName}/users/u/sessions/${got.sessionId}`;
  const whole = (await (await fetch(path)).json()).events;
  const view = (await (await fetch(`${path}?view=compacted`)).json()).events;
  assert.ok(whole.some((e) => e.isCompacted === true), 'summaries are stored in ADK-TS form');
  assert.ok(view.length < whole.length / 2, `${view.length} of ${whole.length} events`);
});

test('the overlap must be a whole number', () => {
  for (const compactionOverlap of [-1, 1.5, Number.NaN]) {
    assert.throws(() => new AgentstateSessionService({ baseUrl: server.url, compactedLoads: true, compactionOverlap }), RangeError);
  }
});
