"""ADK for Python 2.13's `list_sessions` on a database `list_figures` filled (its schema is
ADK's): one user's sessions and the whole app's, three reads each; prints the medians.

    .venv-adk/bin/python bench/list_reference.py DB_URL APP USER
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from google.adk.sessions import DatabaseSessionService


async def main() -> None:
    url, app, user = sys.argv[1:4]
    service = DatabaseSessionService(url)
    medians = []
    for user_id in (user, None):
        times = []
        for _ in range(3):
            started = time.perf_counter()
            listed = await service.list_sessions(app_name=app, user_id=user_id)
            times.append(time.perf_counter() - started)
            assert listed.sessions, "nothing listed"
        medians.append(statistics.median(times))
    print(" / ".join(f"{m * 1000:.0f} ms" for m in medians))


asyncio.run(main())
