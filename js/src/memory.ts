/**
 * `AgentstateMemoryService`: ADK for TypeScript's `BaseMemoryService` over an agentstate server's
 * memory routes.
 */

import { inspect } from 'node:util';

import type { BaseMemoryService, Event, MemoryEntry, SearchMemoryRequest, SearchMemoryResponse, Session } from '@google/adk';

import { AgentstateInvalidRequestError, AgentstateNotFoundError } from './errors.js';
import { Client, segment, type AgentstateClientOptions } from './http.js';
import { eventToWire, isObject, type Json } from './wire.js';

/** Memories a search answers (ADK for Python's in-memory service's number). */
const SEARCH_LIMIT = 10;
/** Memories per page when listing. */
const PAGE_SIZE = 100;

/** Options of `new AgentstateMemoryService(…)`. */
export type AgentstateMemoryServiceOptions = AgentstateClientOptions;

/** A memory as agentstate answers it: ADK's `MemoryEntry`, with its id, metadata and session. */
export interface AgentstateMemoryEntry extends MemoryEntry {
  /** The event's id (or the one given or generated when written directly). */
  id: string;
  /** The caller's metadata. */
  customMetadata: Record<string, unknown>;
  /** The session it came from. */
  sessionId?: string;
}

function entryFromWire(wire: Json): AgentstateMemoryEntry {
  const entry: AgentstateMemoryEntry = {
    id: typeof wire['id'] === 'string' ? wire['id'] : '',
    content: (isObject(wire['content']) ? wire['content'] : {}) as MemoryEntry['content'],
    customMetadata: isObject(wire['customMetadata']) ? wire['customMetadata'] : {},
  };
  if (typeof wire['author'] === 'string') entry.author = wire['author'];
  if (typeof wire['timestamp'] === 'string') entry.timestamp = wire['timestamp'];
  if (typeof wire['sessionId'] === 'string') entry.sessionId = wire['sessionId'];
  return entry;
}

function entries(answer: Json): AgentstateMemoryEntry[] {
  return Array.isArray(answer['memories']) ? (answer['memories'] as Json[]).map(entryFromWire) : [];
}

/**
 * Long-term memory kept by an agentstate server (`agentstate serve`), for ADK for TypeScript.
 *
 * A drop-in for `InMemoryMemoryService`: pass it to `Runner` as `memoryService`; ADK's
 * `LOAD_MEMORY` and `PRELOAD_MEMORY` tools search it. Memories live in the server's database beside
 * the sessions (so `agentstate erase-user` removes them); adding a session again stores each event
 * once; a search finds what ADK for Python's in-memory service finds, at most 10, those sharing
 * the most words with the query first.
 *
 * ```ts
 * import { Runner } from '@google/adk';
 * import { AgentstateMemoryService, AgentstateSessionService } from 'agentstate-adk';
 *
 * const baseUrl = 'http://127.0.0.1:8000';
 * const runner = new Runner({
 *   appName: 'my_app', agent,
 *   sessionService: new AgentstateSessionService({ baseUrl }),
 *   memoryService: new AgentstateMemoryService({ baseUrl }),
 * });
 * ```
 */
export class AgentstateMemoryService implements BaseMemoryService {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly #client: Client;

  constructor(options: AgentstateMemoryServiceOptions) {
    this.#client = new Client(options);
    this.baseUrl = this.#client.baseUrl;
    this.timeoutMs = this.#client.timeoutMs;
  }

  /** Never the token. */
  [inspect.custom](): string {
    return `AgentstateMemoryService { baseUrl: ${JSON.stringify(this.baseUrl)}, timeoutMs: ${this.timeoutMs} }`;
  }

  toJSON(): Json {
    return { baseUrl: this.baseUrl, timeoutMs: this.timeoutMs };
  }

  /**
   * The session's events with text become its memories, replacing what it added before. The
   * session is sent whole: it need not be kept by this server.
   */
  async addSessionToMemory(session: Session): Promise<void> {
    const path = `${userPath(session.appName, session.userId)}/memory/sessions/${segment(session.id)}`;
    await this.#client.json(await this.#client.request('PUT', path, { events: session.events.map(eventToWire) }));
  }

  /**
   * The user's memories sharing words with `query` (at most 10), those sharing the most first;
   * none for a query without words.
   */
  async searchMemory({ appName, userId, query }: SearchMemoryRequest): Promise<SearchMemoryResponse & { memories: AgentstateMemoryEntry[] }> {
    const params = new URLSearchParams({ query, limit: String(SEARCH_LIMIT) });
    try {
      const answer = await this.#client.json(await this.#client.request('GET', `${userPath(appName, userId)}/memories?${params}`));
      return { memories: entries(answer) };
    } catch (error) {
      if (error instanceof AgentstateInvalidRequestError && error.message.includes('no words')) {
        return { memories: [] };
      }
      throw error;
    }
  }

  /**
   * Adds events (ADK for Python's `add_events_to_memory`): each event id once per session, or once
   * without one. A `ttl` in `customMetadata` (seconds, or `"3600s"`) makes them expire. agentstate's
   * extension; answers how many were added.
   */
  async addEventsToMemory(request: {
    appName: string;
    userId: string;
    events: Event[];
    sessionId?: string;
    customMetadata?: Record<string, unknown>;
  }): Promise<number> {
    const body: Json = { events: request.events.map(eventToWire) };
    if (request.sessionId) body['sessionId'] = request.sessionId;
    if (request.customMetadata) body['customMetadata'] = request.customMetadata;
    const answer = await this.#client.json(
      await this.#client.request('POST', `${userPath(request.appName, request.userId)}/memory/events`, body),
    );
    return typeof answer['added'] === 'number' ? answer['added'] : 0;
  }

  /** Writes memories directly (ADK for Python's `add_memory`); answers them with their ids. */
  async addMemory(request: {
    appName: string;
    userId: string;
    memories: Array<MemoryEntry & { id?: string; customMetadata?: Record<string, unknown> }>;
    customMetadata?: Record<string, unknown>;
  }): Promise<AgentstateMemoryEntry[]> {
    const body: Json = { memories: request.memories as unknown as Json[] };
    if (request.customMetadata) body['customMetadata'] = request.customMetadata;
    const path = `${userPath(request.appName, request.userId)}/memories`;
    return entries(await this.#client.json(await this.#client.request('POST', path, body)));
  }

  /**
   * Deletes the user's memories with this id (ADK for Python's `delete_memory`); adding their
   * session again leaves them out. An unknown id is not an error, as in ADK.
   */
  async deleteMemory({ appName, userId, memoryId }: { appName: string; userId: string; memoryId: string }): Promise<void> {
    try {
      await this.#client.json(await this.#client.request('DELETE', `${userPath(appName, userId)}/memories/${segment(memoryId)}`));
    } catch (error) {
      if (!(error instanceof AgentstateNotFoundError)) throw error;
    }
  }

  /** Every memory of the user, oldest first. agentstate's extension. */
  async listMemories({ appName, userId }: { appName: string; userId: string }): Promise<AgentstateMemoryEntry[]> {
    const all: AgentstateMemoryEntry[] = [];
    const params = new URLSearchParams({ pageSize: String(PAGE_SIZE) });
    for (;;) {
      const answer = await this.#client.json(await this.#client.request('GET', `${userPath(appName, userId)}/memories?${params}`));
      all.push(...entries(answer));
      const token = answer['nextPageToken'];
      if (typeof token !== 'string' || !token) return all;
      params.set('pageToken', token);
    }
  }

  /** Deletes every memory of the user; answers how many. agentstate's extension. */
  async deleteUserMemories({ appName, userId }: { appName: string; userId: string }): Promise<number> {
    const answer = await this.#client.json(await this.#client.request('DELETE', `${userPath(appName, userId)}/memories`));
    return typeof answer['deleted'] === 'number' ? answer['deleted'] : 0;
  }
}

function userPath(appName: string, userId: string): string {
  return `/apps/${segment(appName)}/users/${segment(userId)}`;
}
