"""AgentstateArtifactService against the reference's InMemoryArtifactService (the oracle): the
same calls answer the same, and the reference's Runner with a tool that saves an artifact and an
instruction that reads it stores and sees the same on both."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from google.adk.agents import LlmAgent
from google.adk.artifacts import InMemoryArtifactService
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import ToolContext
from google.genai import types

from agentstate_adk import AgentstateArtifactService, AgentstateAuthError, AgentstateSessionService

from conftest import Server
from test_runner import comparable

BYTES = bytes(range(256)) * 4


def version_view(version):
    """An ArtifactVersion without what differs by service: its time and its URI's scheme."""
    if version is None:
        return None
    dumped = version.model_dump(exclude={"create_time"})
    dumped["canonical_uri"] = dumped["canonical_uri"].split("://", 1)[1]
    return dumped


async def scenario(svc) -> list:
    """Every method of BaseArtifactService, and what each answered."""
    seen: list = []
    a = {"app_name": "app", "user_id": "u"}
    s1 = {**a, "session_id": "s1"}
    seen.append(await svc.save_artifact(**s1, filename="notes.txt", artifact=types.Part(text="draft")))
    seen.append(await svc.save_artifact(**s1, filename="notes.txt", artifact=types.Part.from_bytes(data=BYTES, mime_type="application/pdf"),
                                        custom_metadata={"by": "tool", "n": 1}))
    seen.append(await svc.save_artifact(**s1, filename="dir/chart.png",
                                        artifact={"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}))
    seen.append(await svc.save_artifact(**a, filename="user:profile", artifact=types.Part(text="{}")))
    seen.append(await svc.save_artifact(**s1, filename="user:profile", artifact=types.Part(text='{"a": 1}')))
    ref = types.Part(file_data=types.FileData(file_uri="artifact://apps/app/users/u/sessions/s1/artifacts/notes.txt/versions/0"))
    seen.append(await svc.save_artifact(**s1, filename="link", artifact=ref))
    for version in (None, 0, 1, 2, -1):
        seen.append(await svc.load_artifact(**s1, filename="notes.txt", version=version))
    seen.append(await svc.load_artifact(**s1, filename="link"))
    seen.append(await svc.load_artifact(**s1, filename="dir/chart.png"))
    seen.append(await svc.load_artifact(**a, filename="user:profile"))
    seen.append(await svc.load_artifact(**{**a, "session_id": "s2"}, filename="user:profile", version=0))
    seen.append(await svc.load_artifact(**s1, filename="missing"))
    seen.append(await svc.list_artifact_keys(**s1))
    seen.append(await svc.list_artifact_keys(**{**a, "session_id": "s2"}))
    seen.append(await svc.list_artifact_keys(**a))
    seen.append(await svc.list_versions(**s1, filename="notes.txt"))
    seen.append([version_view(v) for v in await svc.list_artifact_versions(**s1, filename="notes.txt")])
    seen.append([version_view(v) for v in await svc.list_artifact_versions(**s1, filename="link")])
    for version in (None, 0, 5):
        seen.append(version_view(await svc.get_artifact_version(**s1, filename="notes.txt", version=version)))
    seen.append(await svc.delete_artifact(**s1, filename="notes.txt"))
    seen.append(await svc.delete_artifact(**s1, filename="notes.txt"))
    seen.append(await svc.list_versions(**s1, filename="notes.txt"))
    seen.append(await svc.save_artifact(**s1, filename="notes.txt", artifact=types.Part(text="again")))
    seen.append(await svc.delete_artifact(**a, filename="user:profile"))
    seen.append(await svc.list_artifact_keys(**s1))
    for refused in (
        svc.save_artifact(**a, filename="notes.txt", artifact=types.Part(text="x")),
        svc.save_artifact(**{**a, "session_id": "user"}, filename="x", artifact=types.Part(text="x")),
        svc.save_artifact(**{**a, "session_id": "../s"}, filename="x", artifact=types.Part(text="x")),
        svc.save_artifact(**s1, filename="x", artifact=types.Part()),
    ):
        with pytest.raises(InputValidationError) as caught:
            await refused
        seen.append(str(caught.value))
    return seen


def test_every_method_answers_as_the_in_memory_service(server):
    ours = asyncio.run(scenario(AgentstateArtifactService(server.url)))
    theirs = asyncio.run(scenario(InMemoryArtifactService()))
    assert ours == theirs
    assert ours[0:6] == [0, 1, 0, 0, 1, 0]


def test_the_registry_uri_and_extra_arguments_and_tokens():
    tokens = [{"token": "u-token-0123456789", "apps": ["app"], "users": ["u"]}]
    server = Server(tokens=tokens)
    try:
        svc = AgentstateArtifactService(uri=f"agentstate://{server.addr}", token="u-token-0123456789", agents_dir="x")
        assert asyncio.run(svc.save_artifact(app_name="app", user_id="u", session_id="s", filename="f",
                                             artifact=types.Part(text="x"))) == 0
        with pytest.raises(AgentstateAuthError):
            asyncio.run(svc.list_artifact_keys(app_name="app", user_id="someone-else", session_id="s"))
        assert "u-token" not in repr(svc)
    finally:
        server.stop()


class Reporter(BaseLlm):
    """Calls `write_report` with the user's words, then answers with the instruction it was given."""

    model: str = "reporter"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1]
        if any(p.function_response for p in last.parts or []):
            text = "Instruction: " + str(llm_request.config.system_instruction)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
        else:
            said = "".join(p.text or "" for p in last.parts or [])
            call = types.FunctionCall(name="write_report", args={"text": said})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


async def write_report(text: str, tool_context: ToolContext) -> dict:
    """Saves the report as an artifact, and a user-wide note."""
    version = await tool_context.save_artifact("report.txt", types.Part(text=f"Report: {text}"))
    await tool_context.save_artifact("user:notes.txt", types.Part(text=f"noted {text}"))
    keys = await tool_context.list_artifacts()
    return {"version": version, "keys": keys}


async def two_turns(artifacts) -> tuple:
    sessions = InMemorySessionService()
    agent = LlmAgent(name="reporter", model=Reporter(), tools=[write_report],
                     instruction="Last report: {artifact.report.txt?}; notes: {artifact.user:notes.txt?}")
    runner = Runner(app_name="app", agent=agent, session_service=sessions, artifact_service=artifacts)
    await sessions.create_session(app_name="app", user_id="u", session_id="s")
    for words in ["first", "second"]:
        message = types.Content(role="user", parts=[types.Part(text=words)])
        async for _ in runner.run_async(user_id="u", session_id="s", new_message=message):
            pass
    session = await sessions.get_session(app_name="app", user_id="u", session_id="s")
    report = await artifacts.load_artifact(app_name="app", user_id="u", session_id="s", filename="report.txt")
    versions = await artifacts.list_versions(app_name="app", user_id="u", session_id="s", filename="report.txt")
    return comparable(session), report, versions


def test_a_runner_saves_and_reads_artifacts_as_with_the_in_memory_service(server):
    ours = asyncio.run(two_turns(AgentstateArtifactService(server.url)))
    theirs = asyncio.run(two_turns(InMemoryArtifactService()))
    assert ours == theirs
    session, report, versions = ours
    assert report == types.Part(text="Report: second") and versions == [0, 1]
    answers = [e for _, e in session["events"] if e.get("content", {}).get("parts", [{}])[0].get("text", "").startswith("Instruction")]
    # Each turn's answer is asked after its tool saved: the instruction reads that turn's versions.
    assert "Last report: Report: first; notes: noted first" in answers[0]["content"]["parts"][0]["text"]
    assert "Last report: Report: second; notes: noted second" in answers[1]["content"]["parts"][0]["text"]
    deltas = [e["actions"].get("artifact_delta") for _, e in session["events"] if e.get("actions", {}).get("artifact_delta")]
    assert deltas == [{"report.txt": 0, "user:notes.txt": 0}, {"report.txt": 1, "user:notes.txt": 1}]


async def turns_then_rewind(sessions, artifacts, rewind) -> tuple:
    """Two turns that save artifacts, then a rewind to before the second: the rewind event's
    artifact_delta and what each artifact loads as after."""
    agent = LlmAgent(name="reporter", model=Reporter(), tools=[write_report], instruction="Report: {artifact.report.txt?}")
    runner = Runner(app_name="app", agent=agent, session_service=sessions, artifact_service=artifacts)
    await sessions.create_session(app_name="app", user_id="u", session_id="r")
    for words in ["first", "second"]:
        message = types.Content(role="user", parts=[types.Part(text=words)])
        async for _ in runner.run_async(user_id="u", session_id="r", new_message=message):
            pass
    session = await sessions.get_session(app_name="app", user_id="u", session_id="r")
    invocations = list(dict.fromkeys(e.invocation_id for e in session.events))
    await rewind(runner, invocations[1])
    session = await sessions.get_session(app_name="app", user_id="u", session_id="r")
    delta = session.events[-1].actions.artifact_delta
    scope = {"app_name": "app", "user_id": "u", "session_id": "r"}
    loaded = {name: await artifacts.load_artifact(**scope, filename=name) for name in ("report.txt", "user:notes.txt")}
    return delta, loaded


def test_a_rewind_restores_artifacts_as_runner_rewind_async_does(server):
    async def reference_rewind(runner, invocation):
        await runner.rewind_async(user_id="u", session_id="r", rewind_before_invocation_id=invocation)

    async def server_rewind(_runner, invocation):
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{server.url}/apps/app/users/u/sessions/r/rewind",
                                       json={"rewindBeforeInvocationId": invocation})
            assert answer.status_code == 200, answer.text

    theirs = asyncio.run(turns_then_rewind(InMemorySessionService(), InMemoryArtifactService(), reference_rewind))
    ours = asyncio.run(turns_then_rewind(AgentstateSessionService(server.url), AgentstateArtifactService(server.url),
                                         server_rewind))
    assert ours == theirs
    delta, loaded = ours
    assert delta == {"report.txt": 2}, "report.txt back to its first version, as a new one; user: names stay"
    assert loaded["report.txt"] == types.Part(text="Report: first")
    assert loaded["user:notes.txt"] == types.Part(text="noted second")
    # ADK's own rewind over agentstate's services restores the same.
    server_two = Server()
    try:
        client_side = asyncio.run(turns_then_rewind(AgentstateSessionService(server_two.url),
                                                    AgentstateArtifactService(server_two.url), reference_rewind))
    finally:
        server_two.stop()
    assert client_side == theirs
