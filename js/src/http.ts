/**
 * What agentstate's services for ADK-TS share: the server's URL and token, and requests to it with
 * their errors mapped.
 */

import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';

import { context, propagation } from '@opentelemetry/api';
import { Agent } from 'undici';

import {
  AgentstateAuthError,
  AgentstateError,
  AgentstateInvalidRequestError,
  AgentstateNotFoundError,
  AgentstateTimeoutError,
  AgentstateUnavailableError,
} from './errors.js';
import { isObject, type Json } from './wire.js';

/** The environment variable a token is read from when none is given. */
export const TOKEN_ENV = 'AGENTSTATE_TOKEN';
/** The environment variable a CA bundle is read from when none is given. */
export const CA_FILE_ENV = 'AGENTSTATE_CA_FILE';
/** Attempts of a request that never reached the server (connection refused or reset). */
const ATTEMPTS = 3;

/** Options of a service: where the server is, and how to reach it. */
export interface AgentstateClientOptions {
  /** The server: `http://127.0.0.1:8000`, `https://host[/prefix]`, or `agentstate://host:port`. */
  baseUrl: string;
  /** An access token of the server (`--tokens-file`); else `AGENTSTATE_TOKEN`, else none. */
  token?: string;
  /** Milliseconds a request may take (default 30 000). */
  timeoutMs?: number;
  /**
   * A PEM file of certificate authorities to trust, besides the system's, for an `https://`
   * server with a certificate of a private CA; else `AGENTSTATE_CA_FILE`, else the system's only.
   */
  caFile?: string;
}

/** An agentstate server over HTTP. */
export class Client {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly #headers: Record<string, string>;
  readonly #dispatcher: Agent | undefined;

  constructor(options: AgentstateClientOptions) {
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
    const caFile = options.caFile ?? process.env[CA_FILE_ENV];
    this.#dispatcher = caFile ? trusting(caFile) : undefined;
  }

  /**
   * One request. A connection refused is retried (nothing was sent); a connection lost after
   * sending is retried only when repeating the request cannot do anything twice: reads, deletes
   * and appends (the server recognises an event id it stored), not creates.
   */
  async request(method: string, path: string, body?: Json): Promise<Response> {
    const repeatable = method !== 'POST' || path.endsWith('/events');
    const url = `${this.baseUrl}${path}`;
    // The caller's trace (ADK's spans) goes on as the server's: a W3C `traceparent` from the
    // active context, when an OpenTelemetry propagator is registered.
    const headers: Record<string, string> = { ...this.#headers };
    propagation.inject(context.active(), headers);
    for (let attempt = 1; ; attempt++) {
      try {
        // `dispatcher` is Node's (undici's) extension of fetch's options.
        const init = {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeoutMs),
          dispatcher: this.#dispatcher,
        };
        return await fetch(url, init as RequestInit);
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
  async json(response: Response): Promise<Json> {
    if (!response.ok) {
      throw failure(response.status, await detailOf(response));
    }
    const text = await response.text();
    const value: unknown = text ? JSON.parse(text) : null;
    return isObject(value) ? value : { value };
  }
}

/** Connections that trust the CAs of `file` as well as the system's. */
function trusting(file: string): Agent {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (error) {
    throw new AgentstateError(`caFile ${file} cannot be read: ${reason(error)}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new AgentstateError(`caFile ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  }
  return new Agent({ connect: { ca: [...rootCertificates, pem] } });
}

export function failure(status: number, detail: string): AgentstateError {
  if (status === 401 || status === 403) return new AgentstateAuthError(detail, status);
  if (status === 404) return new AgentstateNotFoundError(detail, status);
  if (status === 400 || status === 413 || status === 422) return new AgentstateInvalidRequestError(detail, status);
  if (status >= 500) return new AgentstateUnavailableError(`agentstate answered ${status}: ${detail}`, status);
  return new AgentstateError(detail, status);
}

/** The server's `detail` (a string, or FastAPI-style validation errors), else the body's start. */
export async function detailOf(response: Response): Promise<string> {
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

export function segment(value: string): string {
  return encodeURIComponent(value);
}
