/** ADK-TS's `listSessions` answer: its page numbers, from what the server answered. */

import type { ListSessionsResponse, Session } from '@google/adk';

/** What the server answered for one request of `listSessions`. */
export interface ListedPage {
  /** The `limit` asked, if any. */
  limit: number | undefined;
  /** The `page` asked, if any. */
  page: number | undefined;
  /** Where the sessions start among all of them (`offset`, or `(page - 1) * limit`). */
  start: number;
  /** Every session the list covers, counted by the server. */
  totalItems: number;
}

/**
 * `sessions` with ADK-TS's page arithmetic: without `limit`, one page holding everything from
 * `start`; with it, the page `page` (or the one `start` falls in) of `totalPages`.
 */
export function listPage(sessions: Session[], { limit, page, start, totalItems }: ListedPage): ListSessionsResponse {
  if (limit === undefined) {
    return { sessions, page: 1, limit: totalItems, totalItems, totalPages: totalItems === 0 ? 0 : 1 };
  }
  return {
    sessions,
    page: page ?? (limit === 0 ? 1 : Math.floor(start / limit) + 1),
    limit,
    totalItems,
    totalPages: limit === 0 ? 0 : Math.ceil(totalItems / limit),
  };
}
