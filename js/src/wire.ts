/**
 * ADK for TypeScript's sessions and events ↔ the JSON of agentstate's ADK routes.
 *
 * Both sides write events in camelCase, so an event travels as it is: every field ADK-TS has and
 * ADK for Python lacks (`output`, `route`, `nodeInfo`, `isolationScope`, …) is stored and comes
 * back as sent. Only the clock differs: milliseconds here, seconds on the wire.
 */

import { createEvent, createSession, type Event, type Session } from '@google/adk';

import { msToSeconds, secondsToMs } from './time.js';

/** A JSON object as the server answers it. */
export type Json = Record<string, unknown>;

/** The event as the append route takes it: the client's own fields, the time in seconds. */
export function eventToWire(event: Event): Json {
  // JSON drops the event's symbol key and its `undefined` fields, as ADK-TS's own stores do.
  const wire = JSON.parse(JSON.stringify(event)) as Json;
  wire['timestamp'] = msToSeconds(event.timestamp);
  return wire;
}

/** An event as the server answers it → an ADK-TS `Event` (its clock in milliseconds). */
export function eventFromWire(wire: Json): Event {
  const fields: Json = { ...wire };
  // The default node of ADK for Python's answers, which ADK-TS leaves unset.
  const node = fields['nodeInfo'];
  if (isObject(node) && Object.keys(node).length === 1 && node['path'] === '') {
    delete fields['nodeInfo'];
  }
  const timestamp = typeof fields['timestamp'] === 'number' ? secondsToMs(fields['timestamp']) : undefined;
  return createEvent({ ...(fields as Partial<Event>), timestamp });
}

/** A session as the server answers it → an ADK-TS `Session`. agentstate's own fields
 * (`expireTime`) are left out: ADK-TS's model has no place for them. */
export function sessionFromWire(wire: Json): Session {
  const events = Array.isArray(wire['events']) ? (wire['events'] as Json[]) : [];
  return createSession({
    id: String(wire['id']),
    appName: String(wire['appName']),
    userId: String(wire['userId']),
    state: isObject(wire['state']) ? { ...wire['state'] } : {},
    events: events.map(eventFromWire),
    lastUpdateTime: typeof wire['lastUpdateTime'] === 'number' ? secondsToMs(wire['lastUpdateTime']) : 0,
  });
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
