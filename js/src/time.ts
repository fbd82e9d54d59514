/**
 * ADK for TypeScript counts epoch milliseconds (`Date.now()`); agentstate and ADK for Python count
 * epoch seconds and store them to the microsecond. Both directions go through whole microseconds,
 * so a time survives any number of round trips unchanged.
 */

/** Epoch milliseconds → the epoch seconds agentstate's API takes. */
export function msToSeconds(ms: number): number {
  // A millisecond count with at most three decimals divides to the double nearest the exact
  // seconds; the server rounds that to the same whole microsecond.
  return Math.round(ms * 1000) / 1e6;
}

/**
 * Epoch seconds as agentstate answers them → epoch milliseconds: the stored microsecond, exactly
 * (an event written by ADK for Python at …123456 µs reads as …123.456 ms).
 */
export function secondsToMs(seconds: number): number {
  return Math.round(seconds * 1e6) / 1000;
}
