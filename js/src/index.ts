/**
 * agentstate-adk: ADK for TypeScript's session service over an agentstate server.
 *
 * @packageDocumentation
 */

export { AgentstateSessionService, TOKEN_ENV, normalizeBaseUrl } from './service.js';
export type { AgentstateSessionServiceOptions } from './service.js';
export {
  AgentstateAlreadyExistsError,
  AgentstateAuthError,
  AgentstateError,
  AgentstateInvalidRequestError,
  AgentstateNotFoundError,
  AgentstateStaleSessionError,
  AgentstateTimeoutError,
  AgentstateUnavailableError,
} from './errors.js';
export { msToSeconds, secondsToMs } from './time.js';
