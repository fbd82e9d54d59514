// AgentstateArtifactService against ADK-TS's InMemoryArtifactService: the same calls keep and
// answer the same parts, versions and names; and what agentstate adds (metadata with its MIME type
// and time, ADK for Python's refusals as AgentstateInvalidRequestError).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InMemoryArtifactService } from '@google/adk';

import { AgentstateArtifactService, AgentstateInvalidRequestError } from '../dist/index.js';
import { serverForFile, unique } from '../support/server.mjs';

const file = serverForFile();
const artifacts = () => new AgentstateArtifactService({ baseUrl: file.server.url });

async function scenario(service, appName) {
  const s1 = { appName, userId: 'u', sessionId: 's1' };
  const s2 = { appName, userId: 'u', sessionId: 's2' };
  const seen = [];
  seen.push(await service.saveArtifact({ ...s1, filename: 'notes.txt', artifact: { text: 'draft' } }));
  seen.push(await service.saveArtifact({ ...s1, filename: 'notes.txt', artifact: { inlineData: { mimeType: 'application/pdf', data: 'AAECAw==' } } }));
  seen.push(await service.saveArtifact({ ...s1, filename: 'dir/chart.png', artifact: { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } } }));
  seen.push(await service.saveArtifact({ ...s1, filename: 'user:profile', artifact: { text: '{}' } }));
  for (const version of [undefined, 0, 1, 7]) {
    seen.push(await service.loadArtifact({ ...s1, filename: 'notes.txt', version }));
  }
  seen.push(await service.loadArtifact({ ...s2, filename: 'user:profile' }));
  seen.push(await service.loadArtifact({ ...s2, filename: 'notes.txt' }));
  seen.push(await service.listArtifactKeys(s1));
  seen.push(await service.listArtifactKeys(s2));
  seen.push(await service.listVersions({ ...s1, filename: 'notes.txt' }));
  seen.push((await service.listArtifactVersions({ ...s1, filename: 'notes.txt' })).map((v) => v.version));
  seen.push((await service.getArtifactVersion({ ...s1, filename: 'notes.txt', version: 9 })) ?? 'none');
  seen.push(await service.deleteArtifact({ ...s1, filename: 'notes.txt' }));
  seen.push(await service.deleteArtifact({ ...s1, filename: 'notes.txt' }));
  seen.push(await service.listVersions({ ...s1, filename: 'notes.txt' }));
  seen.push(await service.saveArtifact({ ...s1, filename: 'notes.txt', artifact: { text: 'again' } }));
  seen.push(await service.listArtifactKeys(s1));
  return seen;
}

test('the same calls answer as ADK-TS InMemoryArtifactService', async () => {
  const appName = unique('artifacts');
  const ours = await scenario(artifacts(), appName);
  const theirs = await scenario(new InMemoryArtifactService(), appName);
  // Base64 comes back URL-safe (as ADK for Python answers it): the same bytes.
  const bytes = (value) => JSON.parse(JSON.stringify(value), (k, v) => (k === 'data' ? Buffer.from(v, 'base64').toString('hex') : v));
  assert.deepEqual(bytes(ours), bytes(theirs));
  assert.deepEqual(ours.slice(0, 4), [0, 1, 0, 0]);
});

test('metadata carries the MIME type, time and canonical URI; refusals are ADK for Python’s', async () => {
  const service = artifacts();
  const scope = { appName: unique('artifacts'), userId: 'u', sessionId: 's' };
  await service.saveArtifact({ ...scope, filename: 'a.csv', artifact: { inlineData: { mimeType: 'text/csv', data: 'YSxi' } }, customMetadata: { by: 'tool' } });
  const [version] = await service.listArtifactVersions({ ...scope, filename: 'a.csv' });
  assert.equal(version.version, 0);
  assert.equal(version.mimeType, 'text/csv');
  assert.deepEqual(version.customMetadata, { by: 'tool' });
  assert.ok(Math.abs(version.createTime - Date.now() / 1000) < 60);
  assert.equal(version.canonicalUri, `artifact://apps/${scope.appName}/users/u/sessions/s/artifacts/a.csv/versions/0`);
  assert.deepEqual(await service.getArtifactVersion({ ...scope, filename: 'a.csv' }), version);
  await assert.rejects(service.saveArtifact({ ...scope, filename: 'x', artifact: {} }), (error) => {
    assert.ok(error instanceof AgentstateInvalidRequestError);
    assert.match(error.message, /Not supported artifact type/);
    return true;
  });
  await assert.rejects(service.saveArtifact({ ...scope, filename: '../x', artifact: { text: 'x' } }), /parent traversal/);
  assert.deepEqual(await service.listArtifactKeys(scope), ['a.csv']);
});
