"""ADK for Python sessions, memory and artifacts kept by an agentstate server.

    from agentstate_adk import AgentstateArtifactService, AgentstateMemoryService, AgentstateSessionService
    runner = Runner(app_name="my_app", agent=agent,
                    session_service=AgentstateSessionService("http://127.0.0.1:8000"),
                    memory_service=AgentstateMemoryService("http://127.0.0.1:8000"),
                    artifact_service=AgentstateArtifactService("http://127.0.0.1:8000"))
"""

from ._artifacts import AgentstateArtifactService
from ._http import AgentstateAuthError, AgentstateError, AgentstateUnavailableError
from ._memory import AgentstateMemoryService
from ._service import AgentstateSessionService

__all__ = [
    "AgentstateSessionService",
    "AgentstateMemoryService",
    "AgentstateArtifactService",
    "AgentstateError",
    "AgentstateAuthError",
    "AgentstateUnavailableError",
]
__version__ = "0.1.0"
