// The TypeScript in the READMEs compiles (tsc --strict) against this package and @google/adk.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'node:test';

const JS = fileURLToPath(new URL('..', import.meta.url));

function tsBlocks(path) {
  return [...readFileSync(path, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

test('the README examples compile', async () => {
  const blocks = [...tsBlocks(join(JS, '..', 'README.md')), ...tsBlocks(join(JS, 'README.md'))];
  assert.ok(blocks.length >= 3, `found ${blocks.length} blocks`);
  // Inside js/, so that `agentstate-adk` and @google/adk resolve as they do for a user.
  const dir = mkdtempSync(join(JS, '.readme-'));
  try {
    const files = blocks.map((block, i) => {
      const file = join(dir, `example${i}.ts`);
      // What the examples leave to the reader: an agent.
      writeFileSync(file, `${block}\ndeclare const rootAgent: import('@google/adk').BaseAgent;\nexport {};\n`);
      return file;
    });
    const tsc = join(JS, 'node_modules', '.bin', 'tsc');
    const args = ['--noEmit', '--strict', '--skipLibCheck', '--module', 'NodeNext', '--moduleResolution', 'NodeNext',
      '--target', 'ES2022', '--types', 'node', ...files];
    const run = await promisify(execFile)(tsc, args, { cwd: JS }).catch((e) => e);
    assert.equal(run.code ?? 0, 0, `${run.stdout}${run.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
