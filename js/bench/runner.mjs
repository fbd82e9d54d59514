// A Runner turn on AgentstateSessionService against ADK-TS's own InMemorySessionService and its
// DatabaseSessionService (SQLite, PostgreSQL), all in one run; then 16 runners at once on 16
// sessions of one user, each writing its own `user:` key, and how many keys each service keeps.
//
//   node bench/runner.mjs [--turns 200] [--postgres postgresql://postgres@127.0.0.1:5432/test]
//
// The agentstate server is AGENTSTATE_URL, or the binary AGENTSTATE_BIN (else
// ../target/release/agentstate, else ../target/debug/agentstate) started on a throwaway SQLite
// file. PostgreSQL runs in a throwaway database made and dropped here.
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { DatabaseSessionService, InMemorySessionService } from '@google/adk';
import pg from 'pg';

import { AgentstateSessionService } from '../dist/index.js';
import { run, ScopedAgent } from '../support/agents.mjs';
import { startServer } from '../support/server.mjs';

const { values: options } = parseArgs({
  options: {
    turns: { type: 'string', default: '200' },
    postgres: { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/test' },
  },
});
const turns = Number(options.turns);

if (!process.env.AGENTSTATE_URL && !process.env.AGENTSTATE_BIN) {
  const release = new URL('../../target/release/agentstate', import.meta.url).pathname;
  if (existsSync(release)) process.env.AGENTSTATE_BIN = release;
}
const server = process.env.AGENTSTATE_URL ? { url: process.env.AGENTSTATE_URL, stop: async () => {} } : await startServer();
const dir = mkdtempSync(join(tmpdir(), 'agentstate-js-bench-'));
const pgDatabase = `agentstate_bench_${process.pid}`;
const admin = new pg.Client({ connectionString: options.postgres });
await admin.connect();
await admin.query(`CREATE DATABASE ${pgDatabase}`);
const pgUrl = options.postgres.replace(/\/[^/]*$/, `/${pgDatabase}`);

const services = {
  'InMemorySessionService': () => new InMemorySessionService(),
  'AgentstateSessionService (agentstate serve, SQLite)': () => new AgentstateSessionService({ baseUrl: server.url }),
  'DatabaseSessionService (SQLite)': () => new DatabaseSessionService(`sqlite://${dir}/adk.db`),
  'DatabaseSessionService (PostgreSQL)': () => new DatabaseSessionService(pgUrl),
};

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

try {
  const rows = [];
  for (const [name, make] of Object.entries(services)) {
    const service = make();
    const appName = `bench_${Date.now()}`;
    const session = await service.createSession({ appName, userId: 'u' });
    const agent = new ScopedAgent();
    const times = [];
    for (let i = 0; i < turns + 10; i++) {
      const start = process.hrtime.bigint();
      await run(service, agent, { appName, userId: 'u', sessionId: session.id, messages: ['go'] });
      if (i >= 10) times.push(Number(process.hrtime.bigint() - start) / 1e6);
      if ((i + 1) % 10 === 0) process.stderr.write(`\r${name}: ${i + 1}/${turns + 10} turns`);
    }
    process.stderr.write('\n');
    const stored = await service.getSession({ appName, userId: 'u', sessionId: session.id });
    rows.push({ name, median: median(times), events: stored.events.length, kept: await concurrent(make) });
  }
  const base = rows[0].median;
  console.log(`\nA Runner turn (a user message and one agent event), median of ${turns}, one run, Node ${process.version}:\n`);
  console.log('| session service | median | / in-memory | 16 runners at once: user: keys kept |');
  console.log('|---|---|---|---|');
  for (const row of rows) {
    console.log(`| ${row.name} | ${row.median.toFixed(2)} ms | ${(row.median / base).toFixed(2)}× | ${row.kept} of 16 |`);
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
  await admin.query(`DROP DATABASE IF EXISTS ${pgDatabase} WITH (FORCE)`);
  await admin.end();
}
process.exit(0);

/** 16 runners at once on 16 sessions of one user, each writing its own `user:` key: how many stay. */
async function concurrent(make) {
  const service = make();
  const appName = `concurrent_${Date.now()}`;
  // Created one after the other: ADK-TS's DatabaseSessionService fails most creates of one new user
  // made at once (a UNIQUE violation on user_states), which would hide what this measures.
  const sessions = [];
  for (let i = 0; i < 16; i++) sessions.push(await service.createSession({ appName, userId: 'u' }));
  const results = await Promise.allSettled(
    sessions.map((session, i) =>
      run(service, new ScopedAgent(`writer_${i}`, `user:key_${i}`), { appName, userId: 'u', sessionId: session.id, messages: ['go'] }),
    ),
  );
  const failed = results.filter((r) => r.status === 'rejected').length;
  const fresh = await service.createSession({ appName, userId: 'u' });
  const kept = Object.keys(fresh.state).filter((k) => k.startsWith('user:key_')).length;
  return failed ? `${kept} (${failed} runs failed)` : `${kept}`;
}
