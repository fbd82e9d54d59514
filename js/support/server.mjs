// `agentstate serve` for the tests: the server named by AGENTSTATE_URL, or a process of the binary
// (AGENTSTATE_BIN, else the repository's target/debug/agentstate) on a throwaway SQLite file and a
// free port.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

import { AgentstateSessionService } from '../dist/index.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The binary, or undefined when there is none to start (tests then use AGENTSTATE_URL only). */
export function binary() {
  const path = process.env.AGENTSTATE_BIN || join(REPO, 'target', 'debug', 'agentstate');
  return existsSync(path) ? path : undefined;
}

/** A server of the tests' own: `{ url, stop() }`. `options.tokens` turns access control on. */
export async function startServer(options = {}) {
  const bin = binary();
  if (!bin) {
    throw new Error('no agentstate binary: build it (`cargo build -p agentstate-server`) or set AGENTSTATE_BIN');
  }
  const dir = mkdtempSync(join(tmpdir(), 'agentstate-adk-js-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AGENTSTATE_')));
  env.RUST_LOG = 'info';
  if (options.tokens) env.AGENTSTATE_TOKENS = JSON.stringify({ tokens: options.tokens });
  const db = options.db ?? `sqlite://${dir}/sessions.db`;
  const child = spawn(bin, ['serve', '--db', db, '--addr', '127.0.0.1:0', ...(options.args ?? [])], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const addr = await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`agentstate serve did not report its address in 30 s:\n${log}`)), 30_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log += chunk;
      const found = /addr=(\S+)/.exec(log);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`agentstate serve exited (${code}):\n${log}`)));
  });
  child.stderr.resume();
  return {
    url: `http://${addr}`,
    async stop() {
      child.kill('SIGKILL');
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The shared server of a test file: AGENTSTATE_URL when given, else one of its own. */
export async function sharedServer() {
  if (process.env.AGENTSTATE_URL) {
    return { url: process.env.AGENTSTATE_URL.replace(/\/+$/, ''), async stop() {} };
  }
  return startServer();
}

/** A name no other run uses: tests share a server given by URL. */
export function unique(prefix) {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * A test file's server ({@link sharedServer}) and an `AgentstateSessionService` on it, ready before
 * the file's first test and stopped after its last: read `.server` and `.service` inside tests.
 */
export function serverForFile() {
  const file = {};
  before(async () => {
    file.server = await sharedServer();
    file.service = new AgentstateSessionService({ baseUrl: file.server.url });
  });
  after(async () => file.server.stop());
  return file;
}
