/**
 * `AgentstateArtifactService`: ADK for TypeScript's `BaseArtifactService` over an agentstate
 * server's artifact routes (`adk api_server`'s, answered as it answers them).
 */

import { inspect } from 'node:util';

import type {
  ArtifactVersion,
  BaseArtifactService,
  DeleteArtifactRequest,
  ListArtifactKeysRequest,
  ListVersionsRequest,
  LoadArtifactRequest,
  SaveArtifactRequest,
} from '@google/adk';
import type { Part } from '@google/genai';

import { AgentstateNotFoundError } from './errors.js';
import { Client, segment, type AgentstateClientOptions } from './http.js';
import { isObject, type Json } from './wire.js';

/** Options of `new AgentstateArtifactService(…)`. */
export type AgentstateArtifactServiceOptions = AgentstateClientOptions;

/** A version's metadata as agentstate answers it: ADK's `ArtifactVersion`, with its time. */
export interface AgentstateArtifactVersion extends ArtifactVersion {
  /** `artifact://apps/…/versions/N`: a `fileData` part with this URI refers to this version. */
  canonicalUri: string;
  /** What the caller attached. */
  customMetadata: Record<string, unknown>;
  /** When it was saved, Unix seconds. */
  createTime: number;
}

function versionFromWire(wire: Json): AgentstateArtifactVersion {
  const version: AgentstateArtifactVersion = {
    version: typeof wire['version'] === 'number' ? wire['version'] : 0,
    canonicalUri: typeof wire['canonicalUri'] === 'string' ? wire['canonicalUri'] : '',
    customMetadata: isObject(wire['customMetadata']) ? wire['customMetadata'] : {},
    createTime: typeof wire['createTime'] === 'number' ? wire['createTime'] : 0,
  };
  if (typeof wire['mimeType'] === 'string') version.mimeType = wire['mimeType'];
  return version;
}

/**
 * Artifacts kept by an agentstate server (`agentstate serve`), for ADK for TypeScript.
 *
 * A drop-in for `InMemoryArtifactService`: pass it to `Runner` as `artifactService`. Versions
 * start at 0 (and again at 0 after a delete), names starting with `user:` belong to the user in
 * every session, and the artifacts live in the server's database beside the sessions: deleting a
 * session deletes its artifacts, `agentstate erase-user` removes the user's, encryption at rest
 * seals them.
 *
 * ```ts
 * import { Runner } from '@google/adk';
 * import { AgentstateArtifactService, AgentstateSessionService } from 'agentstate-adk';
 *
 * const baseUrl = 'http://127.0.0.1:8000';
 * const runner = new Runner({
 *   appName: 'my_app', agent,
 *   sessionService: new AgentstateSessionService({ baseUrl }),
 *   artifactService: new AgentstateArtifactService({ baseUrl }),
 * });
 * ```
 */
export class AgentstateArtifactService implements BaseArtifactService {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly #client: Client;

  constructor(options: AgentstateArtifactServiceOptions) {
    this.#client = new Client(options);
    this.baseUrl = this.#client.baseUrl;
    this.timeoutMs = this.#client.timeoutMs;
  }

  /** Never the token. */
  [inspect.custom](): string {
    return `AgentstateArtifactService { baseUrl: ${JSON.stringify(this.baseUrl)}, timeoutMs: ${this.timeoutMs} }`;
  }

  toJSON(): Json {
    return { baseUrl: this.baseUrl, timeoutMs: this.timeoutMs };
  }

  /** The answer to a request: an object as it is, anything else (a list, `null`) unwrapped. */
  async #answer(method: string, path: string): Promise<unknown> {
    const answer = await this.#client.json(await this.#client.request(method, path));
    const keys = Object.keys(answer);
    return keys.length === 1 && keys[0] === 'value' ? answer['value'] : answer;
  }

  async #get(path: string): Promise<unknown> {
    return this.#answer('GET', path);
  }

  /** `undefined` for a 404 (no such artifact or version), the answer otherwise. */
  async #find(path: string): Promise<unknown> {
    try {
      return await this.#get(path);
    } catch (error) {
      if (error instanceof AgentstateNotFoundError) return undefined;
      throw error;
    }
  }

  /** Saves `artifact` as the next version of `filename` (0 for a new one); its number. */
  async saveArtifact({ appName, userId, sessionId, filename, artifact, customMetadata }: SaveArtifactRequest): Promise<number> {
    const body: Json = { filename, artifact: artifact as unknown as Json };
    if (customMetadata) body['customMetadata'] = customMetadata as Json;
    const answer = await this.#client.json(await this.#client.request('POST', root(appName, userId, sessionId), body));
    return typeof answer['version'] === 'number' ? answer['version'] : 0;
  }

  /** A version of `filename` (the latest by default), or `undefined`. */
  async loadArtifact({ appName, userId, sessionId, filename, version }: LoadArtifactRequest): Promise<Part | undefined> {
    const query = version === undefined ? '' : `?version=${version}`;
    const found = await this.#find(`${root(appName, userId, sessionId)}/${name(filename)}${query}`);
    return found === undefined ? undefined : (found as Part);
  }

  /** The session's names and the user's `user:` names, sorted. */
  async listArtifactKeys({ appName, userId, sessionId }: ListArtifactKeysRequest): Promise<string[]> {
    return (await this.#get(root(appName, userId, sessionId))) as string[];
  }

  /** Deletes every version of `filename` (nothing to delete is fine). */
  async deleteArtifact({ appName, userId, sessionId, filename }: DeleteArtifactRequest): Promise<void> {
    await this.#answer('DELETE', `${root(appName, userId, sessionId)}/${name(filename)}`);
  }

  /** The version numbers of `filename`, oldest first. */
  async listVersions({ appName, userId, sessionId, filename }: ListVersionsRequest): Promise<number[]> {
    return (await this.#get(`${root(appName, userId, sessionId)}/${name(filename)}/versions`)) as number[];
  }

  /** Every version's metadata, oldest first. */
  async listArtifactVersions({ appName, userId, sessionId, filename }: ListVersionsRequest): Promise<AgentstateArtifactVersion[]> {
    const answer = await this.#get(`${root(appName, userId, sessionId)}/${name(filename)}/versions/metadata`);
    return Array.isArray(answer) ? (answer as Json[]).map(versionFromWire) : [];
  }

  /** One version's metadata (the latest by default), or `undefined`. */
  async getArtifactVersion({ appName, userId, sessionId, filename, version }: LoadArtifactRequest): Promise<AgentstateArtifactVersion | undefined> {
    const which = version === undefined ? 'latest' : String(version);
    const found = await this.#find(`${root(appName, userId, sessionId)}/${name(filename)}/versions/${which}/metadata`);
    return isObject(found) ? versionFromWire(found) : undefined;
  }
}

/** The artifacts of a session. */
function root(appName: string, userId: string, sessionId: string): string {
  return `/apps/${segment(appName)}/users/${segment(userId)}/sessions/${segment(sessionId)}/artifacts`;
}

/** A name in a path: each `/`-separated part encoded, the `/` kept (names may be paths). */
function name(filename: string): string {
  return filename.split('/').map(segment).join('/');
}
