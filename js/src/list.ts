/** ADK-TS's `listSessions` page: its `order`, `limit`, `offset` and `page`, with its arithmetic. */

import type { ListSessionsRequest, ListSessionsResponse, Session } from '@google/adk';

/**
 * Orders and cuts `sessions` as ADK-TS's own services do: `order` by last update (ties by id);
 * without `limit`, everything from `offset` as page 1; with it, the page `page` (1-based) or the
 * one starting at `offset`.
 */
export function listPage(sessions: Session[], request: ListSessionsRequest): ListSessionsResponse {
  const { limit, offset, page, order } = request;
  if (order === 'asc') {
    sessions.sort((a, b) => a.lastUpdateTime - b.lastUpdateTime || a.id.localeCompare(b.id));
  } else if (order === 'desc') {
    sessions.sort((a, b) => b.lastUpdateTime - a.lastUpdateTime || a.id.localeCompare(b.id));
  }
  const totalItems = sessions.length;
  if (limit === undefined) {
    return {
      sessions: offset ? sessions.slice(offset) : sessions,
      page: 1,
      limit: totalItems,
      totalItems,
      totalPages: totalItems === 0 ? 0 : 1,
    };
  }
  const start = page !== undefined ? (page - 1) * limit : (offset ?? 0);
  return {
    sessions: sessions.slice(start, start + limit),
    page: page ?? (limit === 0 ? 1 : Math.floor(start / limit) + 1),
    limit,
    totalItems,
    totalPages: limit === 0 ? 0 : Math.ceil(totalItems / limit),
  };
}
