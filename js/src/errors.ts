/**
 * The errors of `AgentstateSessionService`: one class per thing a caller can act on.
 *
 * Every class extends `AgentstateError`, which carries the HTTP status when the server answered.
 * The messages are the server's own (`detail`), never the request's headers: a token cannot leak
 * through an error.
 */

/** The server refused a request; `status` is its HTTP status, when it answered. */
export class AgentstateError extends Error {
  readonly status: number | undefined;

  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
  }
}

/** 400 or 422: an id, a state or an event the server will not take. Nothing was written. */
export class AgentstateInvalidRequestError extends AgentstateError {}

/** 401 or 403: no token, an unknown one, or one that may not touch this app or user. */
export class AgentstateAuthError extends AgentstateError {}

/** 404: the session does not exist (or has expired). */
export class AgentstateNotFoundError extends AgentstateError {}

/** 409 on create: a session with this id already exists for this app and user. */
export class AgentstateAlreadyExistsError extends AgentstateError {}

/**
 * 409 on append: the session changed since this handle was loaded (another runner appended).
 * Nothing was written; load the session again and retry the turn.
 */
export class AgentstateStaleSessionError extends AgentstateError {}

/** The server cannot be reached or answered 5xx: the same call may succeed later. */
export class AgentstateUnavailableError extends AgentstateError {}

/** The server did not answer within `timeoutMs`. An append may or may not have been stored:
 * retrying it with the same event id never stores it twice. */
export class AgentstateTimeoutError extends AgentstateUnavailableError {}
