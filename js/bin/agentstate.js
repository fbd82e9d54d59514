#!/usr/bin/env node
// `agentstate` from npm: runs the server binary of this platform's package
// (agentstate-adk-<platform>-<arch>, installed through optionalDependencies), with our arguments,
// passing it the signals that stop us, and exits as it exits.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const name = `agentstate-adk-${process.platform}-${process.arch}`;
let binary;
try {
  binary = createRequire(import.meta.url).resolve(`${name}/bin/agentstate`);
} catch {
  console.error(
    `agentstate: no server binary for ${process.platform}-${process.arch}: the package ${name} is not installed.\n` +
      `npm installs it with agentstate-adk on the platforms it exists for (linux-x64 today); an install with\n` +
      `--omit=optional or --no-optional leaves it out. Elsewhere: pip install agentstate-server, or the release archive.`,
  );
  process.exit(1);
}
const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });
// What stops us stops the server (a terminal's Ctrl-C, a process manager's SIGTERM).
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (error) => {
  console.error(`agentstate: could not start ${binary}: ${error.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
