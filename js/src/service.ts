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

import {
  AgentstateAlreadyExistsError,
  AgentstateAuthError,
  AgentstateError,
  AgentstateInvalidRequestError,
  AgentstateNotFoundError,
  AgentstateStaleSessionError,
  AgentstateTimeoutError,
  AgentstateUnavailableError,
} from './errors.js';
import { listPage } from './list.js';
import { msToSeconds, secondsToMs } from './time.js';
import { eventFromWire, eventToWire, isObject, sessionFromWire, type Json } from './wire.js';

/** The environment variable a token is read from when none is given. */
export const TOKEN_ENV = 'AGENTSTATE_TOKEN';
/** Sessions per page when following the server's pages. */
const PAGE_SIZE = 1000;
/** Attempts of a request that never reached the server (connection refused or reset). */
const ATTEMPTS = 3;

/** Options of `new AgentstateSessionService(…)`. */
export interface AgentstateSessionServiceOptions {
  /** The server: `http://127.0.0.1:8000`, `https://host[/prefix]`, or `agentstate://host:port`. */
  baseUrl: string;
  /** An access token of the server (`--tokens-file`); else `AGENTSTATE_TOKEN`, else none. */
  token?: string;
  /** Milliseconds a request may take (default 30 000). */
  timeoutMs?: number;
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
export class AgentstateSessionService extends BaseSessionService {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly #headers: Record<string, string>;

  constructor(options: AgentstateSessionServiceOptions) {
    super();
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    if (!(this.timeoutMs > 0)) {
      throw new RangeError(`timeoutMs must be a positive number of milliseconds, not ${options.timeoutMs}`);
    }
    const token = options.token ?? process.env[TOKEN_ENV];
    this.#headers = { 'content-type': 'application/json', accept: 'application/json' };
    if (token) {
      this.#headers['authorization'] = `Bearer ${token}`;
    }
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
    const response = await this.#request('POST', sessionsPath(appName, userId), body);
    if (response.status === 409) {
      throw new AgentstateAlreadyExistsError(`Session with id ${sessionId} already exists.`, 409);
    }
    return sessionFromWire(await this.#json(response));
  }

  override async getSession({ appName, userId, sessionId, config }: GetSessionRequest): Promise<Session | undefined> {
    const query = new URLSearchParams();
    if (config?.numRecentEvents !== undefined) query.set('numRecentEvents', String(config.numRecentEvents));
    if (config?.afterTimestamp !== undefined) query.set('afterTimestamp', String(msToSeconds(config.afterTimestamp)));
    const path = `${sessionPath(appName, userId, sessionId)}${suffix(query)}`;
    const response = await this.#request('GET', path);
    if (response.status === 404) {
      await response.body?.cancel();
      return undefined;
    }
    return sessionFromWire(await this.#json(response));
  }

  /**
   * The sessions of one user (or of every user of the app), without events, in ADK-TS's shape.
   * The server orders (`order`, by last update), skips (`offset`, or `page` with `limit`), cuts
   * (`limit`) and counts (`totalItems`); without `limit`, its pages are followed to the end.
   */
  override async listSessions(request: ListSessionsRequest): Promise<ListSessionsResponse> {
    const { appName, userId, limit, offset, page, order } = request;
    const path = userId === undefined ? `/apps/${segment(appName)}/sessions` : sessionsPath(appName, userId);
    const start = limit !== undefined && page !== undefined ? (page - 1) * limit : (offset ?? 0);
    const query = new URLSearchParams({ pageSize: String(limit === undefined ? PAGE_SIZE : Math.max(limit, 1)), count: 'true' });
    if (order) query.set('order', order);
    if (start > 0) query.set('offset', String(start));
    const sessions: Session[] = [];
    let totalItems = 0;
    for (;;) {
      const answer = await this.#json(await this.#request('GET', `${path}?${query}`));
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
    return this.#json(await this.#request('GET', `/apps/${segment(appName)}/users/${segment(userId)}/state`));
  }

  /** An app's `app:` state without a session (keys without the prefix). agentstate's extension. */
  async getAppState({ appName }: { appName: string }): Promise<Record<string, unknown>> {
    return this.#json(await this.#request('GET', `/apps/${segment(appName)}/state`));
  }

  override async deleteSession({ appName, userId, sessionId }: DeleteSessionRequest): Promise<void> {
    await this.#json(await this.#request('DELETE', sessionPath(appName, userId, sessionId)));
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
    const response = await this.#request('POST', path, body);
    if (response.status === 409) {
      const detail = await detailOf(response);
      if (detail.includes('modified in storage')) {
        throw new AgentstateStaleSessionError(detail, 409);
      }
      throw new AgentstateError(detail, 409);
    }
    const answer = await this.#json(response);
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

  /**
   * One request. A connection refused is retried (nothing was sent); a connection lost after
   * sending is retried only when repeating the request cannot do anything twice: reads, deletes
   * and appends (the server recognises an event id it stored), not creates.
   */
  async #request(method: string, path: string, body?: Json): Promise<Response> {
    const repeatable = method !== 'POST' || path.endsWith('/events');
    const url = `${this.baseUrl}${path}`;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fetch(url, {
          method,
          headers: this.#headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (error) {
        if (isTimeout(error)) {
          throw new AgentstateTimeoutError(`agentstate at ${this.baseUrl} did not answer in ${this.timeoutMs} ms`);
        }
        if (attempt < ATTEMPTS && (neverArrived(error) || (repeatable && connectionLost(error)))) {
          await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
          continue;
        }
        throw new AgentstateUnavailableError(`agentstate at ${this.baseUrl} is unreachable: ${reason(error)}`, undefined, {
          cause: error,
        });
      }
    }
  }

  /** The body of a 2xx answer; any other answer as its typed error. */
  async #json(response: Response): Promise<Json> {
    if (!response.ok) {
      throw failure(response.status, await detailOf(response));
    }
    const text = await response.text();
    const value: unknown = text ? JSON.parse(text) : null;
    return isObject(value) ? value : { value };
  }
}

function failure(status: number, detail: string): AgentstateError {
  if (status === 401 || status === 403) return new AgentstateAuthError(detail, status);
  if (status === 404) return new AgentstateNotFoundError(detail, status);
  if (status === 400 || status === 413 || status === 422) return new AgentstateInvalidRequestError(detail, status);
  if (status >= 500) return new AgentstateUnavailableError(`agentstate answered ${status}: ${detail}`, status);
  return new AgentstateError(detail, status);
}

/** The server's `detail` (a string, or FastAPI-style validation errors), else the body's start. */
async function detailOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const body: unknown = JSON.parse(text);
    if (isObject(body)) {
      const detail = body['detail'] ?? (isObject(body['error']) ? body['error']['message'] : undefined);
      if (typeof detail === 'string') return detail;
      if (detail !== undefined) return JSON.stringify(detail);
    }
  } catch {
    // Not JSON: the text itself says more than nothing.
  }
  return text.slice(0, 200) || response.statusText || `HTTP ${response.status}`;
}

function isTimeout(error: unknown): boolean {
  return error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

function causeCode(error: unknown): unknown {
  return (error as { cause?: { code?: unknown } } | null)?.cause?.code;
}

/** Whether the request failed before the server could have read it. */
function neverArrived(error: unknown): boolean {
  return causeCode(error) === 'ECONNREFUSED';
}

/** Whether the connection broke (a kept-alive one the server had closed, say): the request may or
 * may not have been read. */
function connectionLost(error: unknown): boolean {
  const code = causeCode(error);
  return code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
}

function reason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** `http(s)://host[:port][/prefix]`, or the `agentstate://host:port` form (`agentstate+https://` for TLS). */
export function normalizeBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(badUrl(value));
  }
  const scheme = { 'agentstate:': 'http:', 'agentstate+http:': 'http:', 'agentstate+https:': 'https:' }[url.protocol]
    ?? url.protocol;
  if ((scheme !== 'http:' && scheme !== 'https:') || !url.host) {
    throw new TypeError(badUrl(value));
  }
  return `${scheme}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

function badUrl(value: string): string {
  return `${JSON.stringify(value)} is not an agentstate server URL: use http://host:port, https://host, or agentstate://host:port`;
}

function segment(value: string): string {
  return encodeURIComponent(value);
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
