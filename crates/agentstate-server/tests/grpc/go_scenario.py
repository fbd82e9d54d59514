"""The steps ADK for Go's Agent Engine session service takes, with Google's own client.

usage: go_scenario.py HOST:PORT TRANSPORT ENGINE [TOKEN]

TRANSPORT is `grpc` (the client's gRPC transport on a cleartext channel) or `rest` (its REST
transport): the same calls, so the two runs must print the same results. `grpcs` and `rests` are
the same over TLS, trusting the CA in the file `AGENTSTATE_TEST_CA`; `grpcs` sends the token as
gRPC's own call credentials, which gRPC sends only over TLS. Ids and times are
replaced by placeholders. The last line printed is the JSON of every step's result.
"""

import datetime
import json
import os
import re
import sys
import threading

import grpc
from google.api_core import exceptions
from google.cloud import aiplatform_v1beta1 as v
from google.cloud.aiplatform_v1beta1.services.session_service import transports
from google.protobuf import json_format, timestamp_pb2

from grpc_token import bearer, cleartext_channel

address, transport_name, engine = sys.argv[1], sys.argv[2], sys.argv[3]
token = sys.argv[4] if len(sys.argv) > 4 else None
PARENT = f"projects/demo/locations/us-central1/reasoningEngines/{engine}"


def client(with_token=True):
    if transport_name == "grpcs":
        with open(os.environ["AGENTSTATE_TEST_CA"], "rb") as ca:
            credentials = grpc.ssl_channel_credentials(ca.read())
        if token and with_token:
            credentials = grpc.composite_channel_credentials(credentials, grpc.access_token_call_credentials(token))
        channel = grpc.secure_channel(address, credentials)
        return v.SessionServiceClient(transport=transports.SessionServiceGrpcTransport(channel=channel))
    if transport_name == "rests":
        # requests (under google-auth's session) trusts the CA bundle this variable names.
        os.environ["REQUESTS_CA_BUNDLE"] = os.environ["AGENTSTATE_TEST_CA"]
        credentials = bearer(token if with_token else None)
        rest = transports.SessionServiceRestTransport(host=address, url_scheme="https", credentials=credentials)
        return v.SessionServiceClient(transport=rest)
    sent = token if with_token else None
    if transport_name == "grpc":
        return v.SessionServiceClient(transport=transports.SessionServiceGrpcTransport(channel=cleartext_channel(address, sent)))
    rest = transports.SessionServiceRestTransport(host=address, url_scheme="http", credentials=bearer(sent))
    return v.SessionServiceClient(transport=rest)


c = client()
ids = {}


def placeholder(session_id):
    return ids.setdefault(session_id, f"S{len(ids) + 1}")


def plain(message):
    """A message as JSON, with session ids and times replaced."""
    data = json_format.MessageToDict(message._pb if hasattr(message, "_pb") else message)
    text = json.dumps(data, sort_keys=True)
    text = re.sub(r"sessions/(\d+)", lambda m: "sessions/" + placeholder(m.group(1)), text)
    text = text.replace(f"reasoningEngines/{engine}/", "reasoningEngines/ENGINE/")
    text = re.sub(r'"(createTime|updateTime|timestamp)": "[^"]+"', r'"\1": "T"', text)
    text = re.sub(r'"timestamp": [0-9.e+]+', '"timestamp": "T"', text)
    text = re.sub(r'"id": "[0-9a-f-]{36}"', '"id": "E"', text)
    text = re.sub(r"events/[0-9a-f-]{36}", "events/E", text)
    return json.loads(text)


def failure(call):
    try:
        call()
    except exceptions.GoogleAPICallError as e:
        # The REST transport prefixes the request line; the status is compared as HTTP's.
        message = re.sub(r"^[A-Z]+ http\S+: ", "", e.message)
        message = re.sub(r"sessions/\d+", "sessions/N", message).replace(f"reasoningEngines/{engine}/", "reasoningEngines/ENGINE/")
        return {"error": int(e.code), "message": message}
    return {"error": None}


def at(seconds):
    stamp = timestamp_pb2.Timestamp()
    stamp.FromSeconds(T0 + seconds)
    return stamp


# Events are stored in time order after their session's creation: their times start later.
T0 = int(datetime.datetime.now(datetime.timezone.utc).timestamp()) + 5
out = {}

# Create: a done operation named {session}/operations/{n}, holding the session.
op = c.create_session(parent=PARENT, session=v.Session(user_id="u1", session_state={"k": 1, "none": None}))
match = re.fullmatch(re.escape(PARENT) + r"/sessions/(\d+)/operations/(\d+)", op.operation.name)
out["create_operation_shape"] = bool(match) and op.operation.done
session = op.result()
out["created"] = plain(session)
name = session.name

# Get, as Go does: it checks the user and reads state and update time.
out["get"] = plain(c.get_session(name=name))

# Appends of every part kind, at whole seconds, with actions and metadata.
parts = [
    v.Part(text="hello"),
    v.Part(inline_data=v.Blob(mime_type="image/png", data=b"\x89PNG\x00\x01")),
    v.Part(file_data=v.FileData(mime_type="application/pdf", file_uri="gs://b/f.pdf")),
    v.Part(function_call=v.FunctionCall(id="c1", name="lookup", args={"q": "x", "n": 3, "nested": {"a": [1, None, True]}})),
    v.Part(function_response=v.FunctionResponse(id="c1", name="lookup", response={"result": {"ok": True, "v": 2.5}})),
    v.Part(executable_code=v.ExecutableCode(language="PYTHON", code="print(1)")),
    v.Part(code_execution_result=v.CodeExecutionResult(outcome="OUTCOME_OK", output="1")),
    v.Part(text="thinking", thought=True, thought_signature=b"sig"),
]
first = v.SessionEvent(
    author="user", invocation_id="inv-1", timestamp=at(1),
    content=v.Content(role="user", parts=parts),
    actions=v.EventActions(state_delta={"user:color": "blue", "app:flag": True, "k": 2.0, "cleared": None},
                           artifact_delta={"report.pdf": 0, "img.png": 3}, transfer_agent="helper", escalate=True),
    event_metadata=v.EventMetadata(turn_complete=True, branch="root.helper", long_running_tool_ids=["c1"],
                                   custom_metadata={"trace": "t-1"},
                                   grounding_metadata=v.GroundingMetadata(web_search_queries=["q"])),
)
c.append_event(name=name, event=first)
c.append_event(name=name, event=v.SessionEvent(
    author="model", invocation_id="inv-1", timestamp=at(2), error_code="SAFETY", error_message="blocked"))
c.append_event(name=name, event=v.SessionEvent(
    author="model", invocation_id="inv-1", timestamp=at(3), event_metadata=v.EventMetadata(partial=True),
    content=v.Content(role="model", parts=[v.Part(text="partial, not stored")])))
c.append_event(name=name, event=v.SessionEvent(
    author="model", invocation_id="inv-2", timestamp=at(4), content=v.Content(role="model", parts=[v.Part(text="done")]),
    actions=v.EventActions(state_delta={"temp:scratch": 1, "k": 3})))

events = list(c.list_events(parent=name))
out["events"] = [plain(e) for e in events]
# Go's time filter: whole seconds with a local offset, inclusive.
since = datetime.datetime.fromtimestamp(T0 + 2, datetime.timezone(datetime.timedelta(hours=-7)))
since_filter = f'timestamp>="{since.strftime("%Y-%m-%dT%H:%M:%S%z")[:-2]}:{since.strftime("%z")[-2:]}"'
out["events_since"] = [e.author + "/" + e.invocation_id for e in c.list_events(request={"parent": name, "filter": since_filter})]
out["state_after_events"] = plain(c.get_session(name=name))["sessionState"]

# A second session of the user sees user: and app: keys; another user only app: keys.
second = c.create_session(parent=PARENT, session=v.Session(user_id="u1")).result()
out["second_state"] = plain(second)["sessionState"]
other = c.create_session(parent=PARENT, session=v.Session(user_id="u2")).result()
out["other_user_state"] = plain(other)["sessionState"]

# The user filter, across pages.
for i in range(3):
    c.create_session(parent=PARENT, session=v.Session(user_id="u1", session_state={"i": i}))
pager = c.list_sessions(request={"parent": PARENT, "filter": 'userId="u1"', "page_size": 2})
listed = [s.user_id for s in pager]
out["listed_u1"] = {"count": len(listed), "users": sorted(set(listed))}
out["list_pages"] = len(list(c.list_sessions(request={"parent": PARENT, "filter": 'userId="u1"', "page_size": 2}).pages))

# Update: display name and labels under a mask; state and update time stay.
updated = c.update_session(
    session=v.Session(name=name, display_name="Trip", labels={"team": "a"}),
    update_mask={"paths": ["display_name", "labels"]},
)
out["updated"] = {k: plain(updated).get(k) for k in ("displayName", "labels", "sessionState")}
# State under the mask: named keys set, the session's own keys not named deleted, user: and
# app: keys not named kept.
replaced = c.update_session(session=v.Session(name=name, session_state={"k": 9, "extra": [1, "two"]}),
                            update_mask={"paths": ["session_state"]})
out["state_replaced"] = plain(replaced)["sessionState"]
out["unknown_mask"] = failure(lambda: c.update_session(session=v.Session(name=name), update_mask={"paths": ["colour"]}))

# 16 concurrent appends of distinct user: keys: none lost.
def write(i):
    client().append_event(name=second.name, event=v.SessionEvent(
        author="tool", invocation_id=f"w{i}", timestamp=at(10 + i),
        actions=v.EventActions(state_delta={f"user:w{i}": i})))

threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
state = plain(c.get_session(name=name))["sessionState"]
out["concurrent_user_keys"] = sorted(k for k in state if k.startswith("user:w"))

# Missing and malformed names.
out["missing_get"] = failure(lambda: c.get_session(name=PARENT + "/sessions/404404"))
out["missing_append"] = failure(lambda: c.append_event(name=PARENT + "/sessions/404404", event=v.SessionEvent(
    author="user", invocation_id="i", timestamp=at(1))))
if transport_name.startswith("grpc"):  # The REST transport refuses these names before sending them.
    out["malformed_get"] = failure(lambda: c.get_session(name=f"{PARENT}/sessions/a/b"))
    out["malformed_parent"] = failure(lambda: list(c.list_sessions(parent="projects/demo")))
out["event_without_author"] = failure(lambda: c.append_event(name=name, event=v.SessionEvent(invocation_id="i", timestamp=at(1))))

# Delete: a done operation; the session is gone.
deleted = c.delete_session(name=second.name)
deleted.result()
out["delete_done"] = deleted.operation.done
out["get_deleted"] = failure(lambda: c.get_session(name=second.name))

if token and transport_name.startswith("grpc"):
    # Over REST, google-auth's session answers a 401 by refreshing the credentials, which anonymous
    # ones refuse with an exception of their own: the refusal is seen over gRPC.
    out["no_token"] = failure(lambda: client(with_token=False).get_session(name=name))

out["_first_session"] = name
print(json.dumps(out, sort_keys=True))
