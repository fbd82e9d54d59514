// A server on TLS with a certificate of a private CA (made here with the openssl command): the
// package reaches it with `caFile` or AGENTSTATE_CA_FILE, refuses it without, and says what is
// wrong with a CA file it cannot use.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { AgentstateError, AgentstateSessionService, AgentstateUnavailableError } from 'agentstate-adk';
import { startServer, unique } from '../support/server.mjs';

const dir = mkdtempSync(join(tmpdir(), 'agentstate-adk-tls-'));
const path = (name) => join(dir, name);
const openssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

let server;
let url;

before(async () => {
  const p256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl('req', '-x509', ...p256, '-keyout', path('ca.key'), '-out', path('ca.pem'), '-days', '2', '-subj', '/CN=agentstate test CA');
  openssl('req', ...p256, '-keyout', path('leaf.key'), '-out', path('leaf.csr'), '-subj', '/CN=agentstate test server');
  writeFileSync(path('leaf.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    'x509', '-req', '-in', path('leaf.csr'), '-CA', path('ca.pem'), '-CAkey', path('ca.key'), '-CAcreateserial',
    '-days', '2', '-extfile', path('leaf.ext'), '-out', path('leaf.pem'),
  );
  server = await startServer({ args: ['--tls-cert', path('leaf.pem'), '--tls-key', path('leaf.key')] });
  url = server.url.replace('http://', 'https://');
});

after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('caFile trusts the private CA; without it the certificate is refused', async () => {
  const appName = unique('tls');
  const trusted = new AgentstateSessionService({ baseUrl: url, caFile: path('ca.pem') });
  const session = await trusted.createSession({ appName, userId: 'u', state: { k: 1 } });
  const read = await trusted.getSession({ appName, userId: 'u', sessionId: session.id });
  assert.deepEqual(read?.state, { k: 1 });

  const untrusted = new AgentstateSessionService({ baseUrl: url });
  await assert.rejects(untrusted.getSession({ appName, userId: 'u', sessionId: session.id }), (error) => {
    assert.ok(error instanceof AgentstateUnavailableError, String(error));
    assert.match(error.message, /VERIFY|CERT|certificate/i);
    return true;
  });
});

test('AGENTSTATE_CA_FILE when no caFile is given', async () => {
  process.env.AGENTSTATE_CA_FILE = path('ca.pem');
  try {
    const service = new AgentstateSessionService({ baseUrl: url });
    const session = await service.createSession({ appName: unique('tls-env'), userId: 'u' });
    assert.ok(session.id);
  } finally {
    delete process.env.AGENTSTATE_CA_FILE;
  }
});

test('a CA file that is missing or not PEM is refused when the service is made, naming it', () => {
  assert.throws(
    () => new AgentstateSessionService({ baseUrl: url, caFile: path('missing.pem') }),
    (error) => error instanceof AgentstateError && error.message.includes('missing.pem'),
  );
  writeFileSync(path('not.pem'), 'not a certificate');
  assert.throws(
    () => new AgentstateSessionService({ baseUrl: url, caFile: path('not.pem') }),
    (error) => error instanceof AgentstateError && /not\.pem.*no PEM certificate/.test(error.message),
  );
});
