// AgentstateMemoryService: what it finds against ADK-TS's InMemoryMemoryService (word queries, where
// ADK-TS's rules and ADK for Python's, which agentstate follows, agree), ADK-TS's own Runner
// recalling an earlier session through LOAD_MEMORY, and agentstate's extensions.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { BaseLlm, InMemoryMemoryService, LlmAgent, LOAD_MEMORY, Runner } from '@google/adk';

import { AgentstateInvalidRequestError, AgentstateMemoryService } from '../dist/index.js';
import { serverForFile, unique } from '../support/server.mjs';

const file = serverForFile();
const memory = () => new AgentstateMemoryService({ baseUrl: file.server.url });

const TEXTS = [
  'I write Rust and Python every day',
  'Rust is fast and rust never sleeps',
  'Tea or coffee, green tea please',
  'my favourite colour is teal',
  'the meeting is on Tuesday',
];

async function conversation(appName, texts) {
  const session = await file.service.createSession({ appName, userId: 'u' });
  for (const [i, text] of texts.entries()) {
    const event = { id: crypto.randomUUID(), invocationId: 'inv', author: i % 2 ? 'agent' : 'user', timestamp: Date.now(), actions: { stateDelta: {}, artifactDelta: {}, requestedAuthConfigs: {}, requestedToolConfirmations: {} }, content: { role: 'user', parts: [{ text }] } };
    await file.service.appendEvent({ session, event });
  }
  return session;
}

const texts = (response) => response.memories.map((m) => m.content.parts.map((p) => p.text).join(' ')).sort();

test('word queries find what ADK-TS InMemoryMemoryService finds', async () => {
  const appName = unique('memory');
  const session = await conversation(appName, TEXTS);
  const reference = new InMemoryMemoryService();
  const ours = memory();
  for (const service of [reference, ours]) {
    await service.addSessionToMemory(session);
    await service.addSessionToMemory(session);
  }
  for (const query of ['rust', 'python', 'tea', 'teal', 'tuesday meeting', 'coffee rust', 'nothing']) {
    const expected = await reference.searchMemory({ appName, userId: 'u', query });
    const found = await ours.searchMemory({ appName, userId: 'u', query });
    assert.deepEqual(texts(found), texts(expected), query);
  }
  const [first] = (await ours.searchMemory({ appName, userId: 'u', query: 'python' })).memories;
  assert.equal(first.id, session.events[0].id);
  assert.equal(first.author, 'user');
  assert.equal(first.sessionId, session.id);
  assert.match(first.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  assert.deepEqual((await ours.searchMemory({ appName, userId: 'u', query: '!!' })).memories, [], 'no words: nothing');
  assert.deepEqual((await ours.searchMemory({ appName, userId: 'other', query: 'rust' })).memories, []);
});

/** Calls load_memory with the user's words, then answers with what it recalled. */
class Recaller extends BaseLlm {
  constructor() {
    super({ model: 'recaller' });
  }

  async *generateContentAsync(request) {
    const last = request.contents.at(-1);
    const response = last.parts.find((p) => p.functionResponse)?.functionResponse;
    if (response) {
      const recalled = response.response.memories.map((m) => m.content).join(' | ');
      yield { content: { role: 'model', parts: [{ text: `I recall: ${recalled}` }] }, turnComplete: true };
    } else if (last.parts[0].text.startsWith('remember')) {
      yield { content: { role: 'model', parts: [{ text: 'Noted.' }] }, turnComplete: true };
    } else {
      const call = { name: 'load_memory', args: { query: last.parts[0].text } };
      yield { content: { role: 'model', parts: [{ functionCall: call }] }, turnComplete: true };
    }
  }

  async connect() {
    throw new Error('not live');
  }
}

test("ADK-TS's Runner recalls an earlier session through LOAD_MEMORY", async () => {
  const appName = unique('recall');
  const memoryService = memory();
  const agent = new LlmAgent({ name: 'recaller', model: new Recaller(), instruction: 'Help.', tools: [LOAD_MEMORY] });
  const runner = new Runner({ appName, agent, sessionService: file.service, memoryService });
  const say = async (sessionId, text) => {
    const events = [];
    for await (const event of runner.runAsync({ userId: 'u', sessionId, newMessage: { role: 'user', parts: [{ text }] } })) {
      events.push(event);
    }
    return events;
  };
  const first = await file.service.createSession({ appName, userId: 'u' });
  await say(first.id, 'remember: my favourite colour is teal');
  await memoryService.addSessionToMemory(await file.service.getSession({ appName, userId: 'u', sessionId: first.id }));
  const second = await file.service.createSession({ appName, userId: 'u' });
  const events = await say(second.id, 'what is my favourite colour?');
  const answer = events.at(-1).content.parts[0].text;
  assert.match(answer, /^I recall: .*teal/, answer);
});

test('events, direct memories, deletion and erasure: the extensions', async () => {
  const appName = unique('memory-extras');
  const ours = memory();
  const said = (text) => ({ id: crypto.randomUUID(), invocationId: 'inv', author: 'user', timestamp: Date.now(), actions: { stateDelta: {}, artifactDelta: {}, requestedAuthConfigs: {}, requestedToolConfirmations: {} }, content: { role: 'user', parts: [{ text }] } });
  const [a, b] = [said('the office moved to Berlin'), said('Berlin is cold')];
  assert.equal(await ours.addEventsToMemory({ appName, userId: 'u', events: [a], sessionId: 's1' }), 1);
  assert.equal(await ours.addEventsToMemory({ appName, userId: 'u', events: [a, b], sessionId: 's1', customMetadata: { ttl: '3600s' } }), 1);
  const [fact] = await ours.addMemory({ appName, userId: 'u', memories: [{ content: { parts: [{ text: 'allergic to peanuts' }] }, author: 'nurse' }] });
  assert.ok(fact.id);
  assert.equal((await ours.searchMemory({ appName, userId: 'u', query: 'berlin' })).memories.length, 2);
  await ours.deleteMemory({ appName, userId: 'u', memoryId: a.id });
  await ours.deleteMemory({ appName, userId: 'u', memoryId: 'no-such-id' });
  await ours.addEventsToMemory({ appName, userId: 'u', events: [a], sessionId: 's1' });
  assert.deepEqual(texts(await ours.searchMemory({ appName, userId: 'u', query: 'berlin' })), ['Berlin is cold'], 'deleted stays deleted');
  assert.equal((await ours.listMemories({ appName, userId: 'u' })).length, 2);
  assert.equal(await ours.deleteUserMemories({ appName, userId: 'u' }), 2);
  assert.deepEqual(await ours.listMemories({ appName, userId: 'u' }), []);
  await assert.rejects(
    ours.addMemory({ appName, userId: 'u', memories: [{ content: { parts: [{ text: ' ' }] } }] }),
    AgentstateInvalidRequestError,
  );
});
