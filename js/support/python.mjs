// ADK for Python with agentstate's Python package (`agentstate-adk`), from the virtualenv
// `.ci/setup-adk` makes (or AGENTSTATE_ADK_PYTHON): runs a script against the same server.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The interpreter, or undefined when this machine has none with ADK for Python. */
export function adkPython() {
  const path = process.env.AGENTSTATE_ADK_PYTHON || join(REPO, '.venv-adk', 'bin', 'python');
  return existsSync(path) ? path : undefined;
}

/** Runs `script` (which reads `ARGS`, a dict, and prints one JSON value) and returns its value. */
export async function python(script, args) {
  const prelude = 'import asyncio, json, os, sys\nARGS = json.loads(os.environ["ARGS"])\n';
  const { stdout } = await promisify(execFile)(adkPython(), ['-c', prelude + script], {
    env: { ...process.env, ARGS: JSON.stringify(args) },
  });
  return JSON.parse(stdout.trim().split('\n').at(-1));
}
