/**
 * agentstate-adk: ADK for TypeScript's session, memory and artifact services over an agentstate
 * server.
 *
 * @packageDocumentation
 */

export { AgentstateSessionService } from './service.js';
export { TOKEN_ENV, normalizeBaseUrl } from './http.js';
export type { AgentstateClientOptions } from './http.js';
export { AgentstateMemoryService } from './memory.js';
export { AgentstateArtifactService } from './artifacts.js';
export type { AgentstateArtifactServiceOptions, AgentstateArtifactVersion } from './artifacts.js';
export type { AgentstateMemoryEntry, AgentstateMemoryServiceOptions } from './memory.js';
export type { AgentstateListOptions, AgentstateSessionServiceOptions } from './service.js';
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
