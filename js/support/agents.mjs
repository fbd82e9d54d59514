// Agents that need no network, for the Runner tests: a BaseAgent writing every scope and a counter,
// and an LlmAgent on a scripted model with an instruction template and an output key.
import { BaseAgent, BaseLlm, createEvent, createEventActions, LlmAgent, Runner } from '@google/adk';

/** Writes a session key, a `user:` key, a `temp:` key and a turn counter, then answers. */
export class ScopedAgent extends BaseAgent {
  constructor(name = 'scoped', userKey = 'user:name') {
    super({ name });
    this.userKey = userKey;
  }

  async *runAsyncImpl(context) {
    const turns = (context.session.state.turns ?? 0) + 1;
    yield createEvent({
      invocationId: context.invocationId,
      author: this.name,
      branch: context.branch,
      content: { role: 'model', parts: [{ text: `turn ${turns}` }] },
      actions: createEventActions({
        stateDelta: { turns, last: `turn ${turns}`, [this.userKey]: 'Ann', 'temp:scratch': turns * 10 },
      }),
    });
  }

  async *runLiveImpl() {
    throw new Error('not live');
  }
}

/** Answers with the system instruction it was given, so a test sees the template filled in. */
export class ScriptedLlm extends BaseLlm {
  constructor() {
    super({ model: 'scripted' });
  }

  async *generateContentAsync(request) {
    const instruction = request.config?.systemInstruction;
    const text = typeof instruction === 'string' ? instruction : JSON.stringify(instruction?.parts ?? instruction ?? '');
    yield { content: { role: 'model', parts: [{ text: `said: ${text}` }] }, turnComplete: true };
  }

  async connect() {
    throw new Error('not live');
  }
}

export function greeter() {
  return new LlmAgent({
    name: 'greeter',
    model: new ScriptedLlm(),
    instruction: 'Greet {user:name}; turns so far: {turns}.',
    outputKey: 'greeting',
  });
}

/** Runs `turns` user messages through `agent` on `sessionService`; returns the events it yielded. */
export async function run(sessionService, agent, { appName, userId, sessionId, messages }) {
  const runner = new Runner({ appName, agent, sessionService });
  const yielded = [];
  for (const text of messages) {
    for await (const event of runner.runAsync({ userId, sessionId, newMessage: { role: 'user', parts: [{ text }] } })) {
      yielded.push(event);
    }
  }
  return yielded;
}

/** A stored session without what differs between two stores by design: ids and clocks. */
export function comparable(session) {
  const invocations = new Map();
  const events = session.events.map((event) => {
    const copy = JSON.parse(JSON.stringify(event));
    delete copy.id;
    delete copy.timestamp;
    if (!invocations.has(copy.invocationId)) invocations.set(copy.invocationId, `inv-${invocations.size}`);
    copy.invocationId = invocations.get(copy.invocationId);
    return copy;
  });
  return { appName: session.appName, userId: session.userId, state: { ...session.state }, events };
}
