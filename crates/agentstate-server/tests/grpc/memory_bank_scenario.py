"""Memory Bank with Google's own client (`aiplatform_v1beta1.MemoryBankServiceClient`).

usage: memory_bank_scenario.py HOST:PORT TRANSPORT ENGINE [TOKEN]

TRANSPORT is `grpc` (the client's gRPC transport on a cleartext channel) or `rest` (its REST
transport): the same calls, so the two runs must print the same results. Generated ids and
times are replaced by placeholders. The last line printed is the JSON of every step's result.
"""

import json
import re
import sys

from google.api_core import exceptions
from google.cloud import aiplatform_v1beta1 as v
from google.cloud.aiplatform_v1beta1.services.memory_bank_service import transports
from google.protobuf import field_mask_pb2, json_format

from grpc_token import bearer, cleartext_channel

address, transport_name, engine = sys.argv[1], sys.argv[2], sys.argv[3]
token = sys.argv[4] if len(sys.argv) > 4 else None
PARENT = f"projects/demo/locations/us-central1/reasoningEngines/{engine}"


def client(with_token=True):
    sent = token if with_token else None
    if transport_name == "grpc":
        return v.MemoryBankServiceClient(transport=transports.MemoryBankServiceGrpcTransport(channel=cleartext_channel(address, sent)))
    rest = transports.MemoryBankServiceRestTransport(host=address, url_scheme="http", credentials=bearer(sent))
    return v.MemoryBankServiceClient(transport=rest)


c = client()
ids = {}


def plain(message):
    """A message as JSON, with generated ids and times replaced."""
    data = json_format.MessageToDict(message._pb if hasattr(message, "_pb") else message)
    text = json.dumps(data, sort_keys=True)
    text = re.sub(r"memories/(\d{19})", lambda m: "memories/" + ids.setdefault(m.group(1), f"M{len(ids) + 1}"), text)
    text = text.replace(f"reasoningEngines/{engine}/", "reasoningEngines/ENGINE/")
    text = text.replace(f'"app_name": "{engine}"', '"app_name": "ENGINE"')
    text = re.sub(r'"(createTime|updateTime|expireTime)": "[^"]+"', r'"\1": "T"', text)
    return json.loads(text)


def failure(call):
    try:
        call()
    except exceptions.GoogleAPICallError as e:
        # The REST transport prefixes the request line; the status is compared as HTTP's.
        message = re.sub(r"^[A-Z]+ http\S+: ", "", e.message)
        message = re.sub(rf"\b{engine}\b", "ENGINE", message)
        message = re.sub(r"memories/\d{19}", "memories/N", message)
        return {"error": int(e.code), "message": message}
    return {"error": None}


alice = {"app_name": engine, "user_id": "alice"}
out = {}

# Create with an id, metadata of every type, a topic and a time to live: a done operation named
# {memory}/operations/{n}, holding the memory.
tea = v.Memory(
    fact="Alice likes green tea",
    scope=alice,
    display_name="tea",
    topics=[v.MemoryTopicId(managed_memory_topic="USER_PREFERENCES")],
    metadata={"source": v.MemoryMetadataValue(string_value="chat"), "n": v.MemoryMetadataValue(double_value=2.5),
              "ok": v.MemoryMetadataValue(bool_value=True)},
    ttl={"seconds": 3600},
)
op = c.create_memory(parent=PARENT, memory=tea, memory_id="tea")
out["create_operation_shape"] = op.operation.name.startswith(f"{PARENT}/memories/tea/operations/") and op.operation.done
out["created"] = plain(op.result())
name = f"{PARENT}/memories/tea"
out["get"] = plain(c.get_memory(name=name))

# Without an id: generated; in another scope.
other = c.create_memory(parent=PARENT, memory=v.Memory(fact="Bob likes coffee", scope={"user_id": "bob"})).result()
out["generated_id"] = bool(re.fullmatch(re.escape(PARENT) + r"/memories/\d{19}", other.name))

# Update by mask: only the fact.
update = v.Memory(name=name, fact="Alice likes oolong tea", display_name="ignored")
out["updated"] = plain(c.update_memory(memory=update, update_mask=field_mask_pb2.FieldMask(paths=["fact"])).result())

# Generate from direct memories: done at once, the memories listed.
generated = c.generate_memories(
    request={
        "parent": PARENT,
        "direct_memories_source": {"direct_memories": [{"fact": "Alice flies to Lisbon"}, {"fact": "Alice has a cat"}]},
        "scope": alice,
    }
).result()
out["generated"] = plain(generated)

# List the engine, a page at a time.
out["listed"] = sorted(m.fact for m in c.list_memories(request={"parent": PARENT, "page_size": 1}))

# Retrieve: by similarity (distances), and simple, a page at a time; scopes exact.
near = c.retrieve_memories(
    request={"parent": PARENT, "scope": alice, "similarity_search_params": {"search_query": "oolong tea", "top_k": 2}}
)
out["near"] = [(r.memory.fact, r.distance) for r in near.retrieved_memories]
out["near_token"] = near.next_page_token
simple, page_token, out["simple_pages"] = [], "", 0
while True:
    params = {"page_size": 2, "page_token": page_token}
    page = c.retrieve_memories(request={"parent": PARENT, "scope": alice, "simple_retrieval_params": params})
    simple += [r.memory.fact for r in page.retrieved_memories]
    out["simple_pages"] += 1
    page_token = page.next_page_token
    if not page_token:
        break
out["simple"] = sorted(simple)
bob = {"parent": PARENT, "scope": {"user_id": "bob"}, "similarity_search_params": {"search_query": "likes"}}
out["bob_only"] = [r.memory.fact for r in c.retrieve_memories(request=bob).retrieved_memories]

# Delete: a done operation; then not found.
out["deleted"] = c.delete_memory(name=name).operation.done
out["get_deleted"] = failure(lambda: c.get_memory(name=name))

# Bad input, as Google answers it.
out["empty_fact"] = failure(lambda: c.create_memory(parent=PARENT, memory=v.Memory(fact="", scope=alice)))
out["no_scope"] = failure(lambda: c.create_memory(parent=PARENT, memory=v.Memory(fact="a fact")))
out["taken_id"] = failure(lambda: c.create_memory(parent=PARENT, memory=v.Memory(fact="a b", scope=alice), memory_id=other.name.rsplit("/", 1)[1]))
out["deleted_id"] = failure(lambda: c.create_memory(parent=PARENT, memory=v.Memory(fact="a b", scope=alice), memory_id="tea"))
out["malformed_name"] = failure(lambda: c.get_memory(name=f"{PARENT}/memories/{'x' * 200}"))
said = {"events": [{"content": {"role": "user", "parts": [{"text": "hi"}]}}]}
out["no_model"] = failure(
    lambda: c.generate_memories(request={"parent": PARENT, "direct_contents_source": said, "scope": alice})
)
if token and transport_name == "grpc":
    # Over REST, google-auth's session answers a 401 by refreshing the credentials, which anonymous
    # ones refuse with an exception of their own: the refusal is seen over gRPC.
    out["no_token"] = failure(lambda: client(with_token=False).get_memory(name=other.name))

print(json.dumps(out, sort_keys=True))
