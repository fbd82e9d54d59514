"""ADK for Python sessions kept by an agentstate server.

    from agentstate_adk import AgentstateSessionService
    runner = Runner(app_name="my_app", agent=agent,
                    session_service=AgentstateSessionService("http://127.0.0.1:8000"))
"""

from ._service import (
    AgentstateAuthError,
    AgentstateError,
    AgentstateSessionService,
    AgentstateUnavailableError,
)

__all__ = [
    "AgentstateSessionService",
    "AgentstateError",
    "AgentstateAuthError",
    "AgentstateUnavailableError",
]
__version__ = "0.1.0"
