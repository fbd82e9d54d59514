/**
 * `AgentstateSessionService`: ADK for TypeScript's `BaseSessionService` over an agentstate server's
 * HTTP API (the session routes of `adk api_server`, plus agentstate's append route).
 */

import { inspect } from 'node:util';

import {
  BaseSessionService,
  type AppendEventRequest,
  type CreateSessionRequest,
  type DeleteSessionRequest,
  type Event,
  type GetSessionRequest,
  type ListSessionsRequest,
  type ListSessionsResponse,
  type Session,
} from '@google/adk';

import { AgentstateAlreadyExistsError, AgentstateError, AgentstateStaleSessionError } from './errors.js';
import { Client, detailOf, segment, type AgentstateClientOptions } from './http.js';
import { listPage } from './list.js';
import { msToSeconds, secondsToMs } from './time.js';
import { eventFromWire, eventToWire, isObject, sessionFromWire, type Json } from './wire.js';

/** Sessions per page when following the server's pages. */
const PAGE_SIZE = 1000;

/** Options of `new AgentstateSessionService(…)`. */
export interface AgentstateSessionServiceOptions extends AgentstateClientOptions {
  /**
   * Load only what ADK reads of a history it compacts (`view=compacted` on the server): the
   * newest summary (`isCompacted` events of the agent's `contextCompactors`) and the events after
   * its end, with the calls a resumed long-running tool looks up. Default `false`: every event.
   */
  compactedLoads?: boolean;
  /** ADK for Python's `overlap_size`, for sessions it compacts too (default 1). */
  compactionOverlap?: number;
}

/**
 * Sessions kept by an agentstate server (`agentstate serve`), for ADK for TypeScript.
 *
 * A drop-in for `InMemorySessionService` or `DatabaseSessionService`: pass it to `Runner`. Unlike
 * them, concurrent writers of `user:`/`app:` keys lose nothing (the server merges each delta key by
 * key, atomically), an append through a handle loaded before another append is refused with
 * `AgentstateStaleSessionError` (never silently reloaded), a retried append is stored once, and
 * `getSession` windows are answered by the server without loading the whole history.
 *
 * ```ts
 * import { Runner } from '@google/adk';
 * import { AgentstateSessionService } from 'agentstate-adk';
 *
 * const sessionService = new AgentstateSessionService({ baseUrl: 'http://127.0.0.1:8000' });
 * const runner = new Runner({ appName: 'my_app', agent, sessionService });
 * ```
 */
/** agentstate's list options beside ADK-TS's. */
export interface AgentstateListOptions {
  /** `update_time` or `create_time`, then `asc` or `desc` (`order`, when given, sets the direction). */
  orderBy?: string;
  /** Agent Engine's filter syntax: terms joined by AND on user_id, display_name, labels.KEY, state.KEY, update_time, create_time. */
  filter?: string;
}

export class AgentstateSessionService extends BaseSessionService {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly #client: Client;
  readonly #view: [string, string][];

  constructor(options: AgentstateSessionServiceOptions) {
    super();
    this.#client = new Client(options);
    const overlap = options.compactionOverlap ?? 1;
    if (!Number.isInteger(overlap) || overlap < 0) {
      throw new RangeError(`compactionOverlap must be a whole number of invocations, 0 or more, not ${overlap}`);
    }
    this.#view = options.compactedLoads ? [['view', 'compacted'], ['overlap', String(overlap)]] : [];
    this.baseUrl = this.#client.baseUrl;
    this.timeoutMs = this.#client.timeoutMs;
  }

  /** Never the token. */
  [inspect.custom](): string {
    return `AgentstateSessionService { baseUrl: ${JSON.stringify(this.baseUrl)}, timeoutMs: ${this.timeoutMs} }`;
  }

  toJSON(): Json {
    return { baseUrl: this.baseUrl, timeoutMs: this.timeoutMs };
  }

  override async createSession({ appName, userId, state, sessionId }: CreateSessionRequest): Promise<Session> {
    const body: Json = {};
    if (sessionId) body['sessionId'] = sessionId;
    if (state && Object.keys(state).length > 0) body['state'] = state;
    const response = await this.#client.request('POST', sessionsPath(appName, userId), body);
    if (response.status === 409) {
      throw new AgentstateAlreadyExistsError(`Session with id ${sessionId} already exists.`, 409);
    }
    return sessionFromWire(await this.#client.json(response));
  }

  override async getSession({ appName, userId, sessionId, config }: GetSessionRequest): Promise<Session | undefined> {
    const query = new URLSearchParams(this.#view);
    if (config?.numRecentEvents !== undefined) query.set('numRecentEvents', String(config.numRecentEvents));
    if (config?.afterTimestamp !== undefined) query.set('afterTimestamp', String(msToSeconds(config.afterTimestamp)));
    const path = `${sessionPath(appName, userId, sessionId)}${suffix(query)}`;
    const response = await this.#client.request('GET', path);
    if (response.status === 404) {
      await response.body?.cancel();
      return undefined;
    }
    return sessionFromWire(await this.#client.json(response));
  }

  /**
   * The sessions of one user (or of every user of the app), without events, in ADK-TS's shape.
   * The server orders (`order`, by last update; agentstate's `orderBy`, `'create_time desc'`),
   * filters (agentstate's `filter`, in Agent Engine's syntax: `'labels.team="red" AND
   * state.stage=2'`), skips (`offset`, or `page` with `limit`), cuts (`limit`) and counts
   * (`totalItems`); without `limit`, its pages are followed to the end.
   */
  override async listSessions(request: ListSessionsRequest & AgentstateListOptions): Promise<ListSessionsResponse> {
    const { appName, userId, limit, offset, page, order, orderBy, filter } = request;
    const path = userId === undefined ? `/apps/${segment(appName)}/sessions` : sessionsPath(appName, userId);
    const start = limit !== undefined && page !== undefined ? (page - 1) * limit : (offset ?? 0);
    const query = new URLSearchParams({ pageSize: String(limit === undefined ? PAGE_SIZE : Math.max(limit, 1)), count: 'true' });
    if (order) query.set('order', order);
    if (orderBy) query.set('orderBy', orderBy);
    if (filter) query.set('filter', filter);
    if (start > 0) query.set('offset', String(start));
    const sessions: Session[] = [];
    let totalItems = 0;
    for (;;) {
      const answer = await this.#client.json(await this.#client.request('GET', `${path}?${query}`));
      if (typeof answer['totalSize'] === 'number') totalItems = answer['totalSize'];
      for (const wire of Array.isArray(answer['sessions']) ? (answer['sessions'] as Json[]) : []) {
        sessions.push(sessionFromWire({ ...wire, events: [] }));
      }
      const token = answer['nextPageToken'];
      if (limit !== undefined || typeof token !== 'string' || !token) break;
      // Later pages start at the token: no offset, no second count.
      query.set('pageToken', token);
      query.delete('offset');
      query.delete('count');
    }
    return listPage(limit === 0 ? [] : sessions, { limit, page, start, totalItems });
  }

  /**
   * A user's `user:` state without a session (keys without the prefix; `{}` when none), as ADK for
   * Python's `get_user_state` answers: it outlives the user's sessions. agentstate's extension.
   */
  async getUserState({ appName, userId }: { appName: string; userId: string }): Promise<Record<string, unknown>> {
    return this.#client.json(await this.#client.request('GET', `/apps/${segment(appName)}/users/${segment(userId)}/state`));
  }

  /** An app's `app:` state without a session (keys without the prefix). agentstate's extension. */
  async getAppState({ appName }: { appName: string }): Promise<Record<string, unknown>> {
    return this.#client.json(await this.#client.request('GET', `/apps/${segment(appName)}/state`));
  }

  override async deleteSession({ appName, userId, sessionId }: DeleteSessionRequest): Promise<void> {
    await this.#client.json(await this.#client.request('DELETE', sessionPath(appName, userId, sessionId)));
  }

  /**
   * Stores the event whole on the server, which merges its delta key by key and refuses it if the
   * session changed since `session` was loaded; then applies it to `session` as ADK-TS's base class
   * does (`temp:` keys stay out of the state). Partial events are not stored.
   */
  override async appendEvent({ session, event }: AppendEventRequest): Promise<Event> {
    if (event.partial) {
      return event;
    }
    if (!event.id) {
      // An id of the client's own makes a retry after a lost answer recognisable: stored once.
      event.id = crypto.randomUUID();
    }
    const path = `${sessionPath(session.appName, session.userId, session.id)}/events`;
    const body = { event: eventToWire(event), expectedLastUpdateTime: msToSeconds(session.lastUpdateTime) };
    const response = await this.#client.request('POST', path, body);
    if (response.status === 409) {
      const detail = await detailOf(response);
      if (detail.includes('modified in storage')) {
        throw new AgentstateStaleSessionError(detail, 409);
      }
      throw new AgentstateError(detail, 409);
    }
    const answer = await this.#client.json(response);
    const stored = isObject(answer['event']) ? eventFromWire(answer['event']) : event;
    session.lastUpdateTime = typeof answer['lastUpdateTime'] === 'number'
      ? secondsToMs(answer['lastUpdateTime'])
      : stored.timestamp;
    if (answer['duplicate'] === true && session.events.some((e) => e.id === stored.id)) {
      // Stored and applied before, through this handle: nothing changed.
      return stored;
    }
    // The server may move a time that would not follow the session's last one.
    event.timestamp = stored.timestamp;
    return super.appendEvent({ session, event });
  }
}

function sessionsPath(appName: string, userId: string): string {
  return `/apps/${segment(appName)}/users/${segment(userId)}/sessions`;
}

function sessionPath(appName: string, userId: string, sessionId: string): string {
  return `${sessionsPath(appName, userId)}/${segment(sessionId)}`;
}

function suffix(query: URLSearchParams): string {
  const text = query.toString();
  return text ? `?${text}` : '';
}
