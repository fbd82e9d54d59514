//! The schemas of the OpenAPI document's components: sessions, events, memories, history.

use serde_json::{Value, json};

pub(super) fn schemas() -> Value {
    let mut schemas = json!({
        "Error": {"type": "object", "required": ["detail"], "properties": {"detail": {
            "description": "A message, or FastAPI's list of validation problems (422)"}}},
        "Event": {"type": "object", "description": "An event in the reference's camelCase JSON; fields not listed are kept as sent.",
            "properties": {"id": {"type": "string"}, "invocationId": {"type": "string"}, "author": {"type": "string"},
                "timestamp": {"type": "number"}, "content": {"type": ["object", "null"]}, "partial": {"type": ["boolean", "null"]},
                "branch": {"type": ["string", "null"]},
                "deletedKeys": {"type": "array", "items": {"type": "string"},
                    "description": "agentstate: keys the event deletes (each also null in actions.stateDelta)"},
                "actions": {"type": "object", "properties": {
                    "stateDelta": {"type": "object"}, "artifactDelta": {"type": "object"},
                    "transferToAgent": {"type": ["string", "null"]}, "escalate": {"type": ["boolean", "null"]},
                    "skipSummarization": {"type": ["boolean", "null"]}}}}},
        "Session": {"type": "object", "required": ["id", "appName", "userId", "state", "events", "lastUpdateTime"],
            "properties": {"id": {"type": "string"}, "appName": {"type": "string"}, "userId": {"type": "string"},
                "state": {"type": "object", "description": "Merged state: session keys, then app: and user: keys"},
                "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
                "lastUpdateTime": {"type": "number", "description": "Epoch seconds"},
                "expireTime": {"type": "string", "format": "date-time", "description": "agentstate extension, present when the session expires: from then on it behaves as deleted"}}},
        "Erased": {"type": "object", "required": ["sessions", "events", "userStateKeys", "memories", "artifacts", "dryRun"], "properties": {
            "sessions": {"type": "integer"}, "events": {"type": "integer"},
            "userStateKeys": {"type": "integer", "description": "Keys of the user's user: state"},
            "memories": {"type": "integer", "description": "The user's long-term memories"},
            "artifacts": {"type": "integer", "description": "Versions of the user's artifacts, of every session and user-scoped"},
            "dryRun": {"type": "boolean", "description": "True when nothing was removed (only counted)"}}},
        "SessionListOrPage": {"oneOf": [
            {"$ref": "#/components/schemas/SessionList"},
            {"type": "object", "required": ["sessions"], "properties": {
                "sessions": {"$ref": "#/components/schemas/SessionList"},
                "nextPageToken": {"type": "string", "description": "Pass as pageToken for the next page; absent on the last"},
                "totalSize": {"type": "integer", "description": "With count=true: the sessions of every page together"}}}]},
        "SessionList": {"type": "array", "items": {"$ref": "#/components/schemas/Session"}},
        "CreateSessionRequest": {"type": ["object", "null"], "description": "null: a session with a generated id", "properties": {
            "sessionId": {"type": "string", "description": "1–128 printable characters; generated (UUIDv4) if absent"},
            "state": {"type": "object"}, "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
            "options": {"type": "object", "description": "Refused: no session option is supported"},
            "ttl": {"type": ["string", "null"], "pattern": "^[0-9.]+s$", "description": "agentstate extension (the managed service's duration): expire this long after creation, e.g. \"3600s\"; not with expireTime"},
            "expireTime": {"type": ["string", "null"], "format": "date-time", "description": "agentstate extension: expire at this RFC 3339 time; not with ttl"}}},
        "State": {"type": ["object", "null"], "description": "Initial state, keys with their scope prefix (null: none)"},
        "UpdateSessionRequest": {"type": "object", "description": "stateDelta, deleteKeys or both (422 with neither)", "properties": {
            "stateDelta": {"type": ["object", "null"]},
            "deleteKeys": {"type": ["array", "null"], "items": {"type": "string"}, "description": "agentstate extension: keys to delete, any scope"}}},
        "StateWrite": {"type": "object", "description": "A write of app or user state without a session: stateDelta, deleteKeys or both (422 with neither); keys without their scope prefix (400 with one)", "properties": {
            "stateDelta": {"type": ["object", "null"], "description": "Keys to set (null values are stored as null)"},
            "deleteKeys": {"type": ["array", "null"], "items": {"type": "string"}, "description": "Keys to remove"}}},
        "StateWritePage": {"type": "object", "required": ["writes"], "properties": {
            "writes": {"type": "array", "items": {"type": "object", "required": ["id", "time", "origin", "setKeys", "deleteKeys"], "properties": {
                "id": {"type": "string"},
                "time": {"type": "number", "description": "Epoch seconds"},
                "origin": {"type": "string", "description": "What wrote it: a route, the command line, a caller's name"},
                "setKeys": {"type": "array", "items": {"type": "string"}},
                "deleteKeys": {"type": "array", "items": {"type": "string"}}}}},
            "nextPageToken": {"type": "string", "description": "Pass as pageToken for the next page; absent on the last"}}},
        "EventPage": {"type": "object", "required": ["events"], "properties": {
            "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
            "nextPageToken": {"type": "string", "description": "Pass as `after` for the next page; absent on the last"}}},
        "AppList": {"type": "array", "items": {"type": "string"}},
        "EventList": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
        "EventStream": {"type": "string", "description": "Server-sent events, one `data: <Event JSON>` per event"},
        "RunAgentRequest": {"type": "object", "required": ["userId", "sessionId"], "properties": {
            "appName": {"type": "string", "description": "Optional when the server serves one app"},
            "userId": {"type": "string"}, "sessionId": {"type": "string"},
            "newMessage": {"type": "object", "description": "Content: {\"role\": \"user\", \"parts\": [{\"text\": …}]}"},
            "streaming": {"type": "boolean", "default": false, "description": "Also send partial (streamed) events"},
            "stateDelta": {"type": "object", "description": "State set on the user's event"}}},
        "Status": {"type": "object", "properties": {"status": {"type": "string"}}},
        "GoogleError": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"},
                "status": {"type": "string", "description": "INVALID_ARGUMENT, NOT_FOUND, ABORTED, ALREADY_EXISTS, …"}}}}},
        "VertexCreateSession": {"type": "object", "required": ["userId"], "properties": {
            "userId": {"type": "string"}, "sessionState": {"type": "object"}, "displayName": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "ttl": {"type": ["string", "null"], "description": "Seconds, e.g. \"7200s\"; not with expireTime"},
            "expireTime": {"type": ["string", "null"], "format": "date-time"}},
            "description": "Field names in camelCase or snake_case"},
        "VertexSessionPatch": {"type": "object", "properties": {
            "displayName": {"type": ["string", "null"]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "ttl": {"type": ["string", "null"], "description": "Seconds from now, e.g. \"7200s\"; not with expireTime"},
            "expireTime": {"type": ["string", "null"], "format": "date-time"},
            "sessionState": {"type": "object", "description": "The state as it is to be: named keys set, the session's own keys not named deleted (one event)"},
            "name": {"type": "string"}, "userId": {"type": "string"},
            "createTime": {"type": "string"}, "updateTime": {"type": "string"}},
            "description": "Field names in camelCase or snake_case; name, user and times are not changed"},
        "VertexSession": {"type": "object", "required": ["name", "userId", "sessionState", "createTime", "updateTime"], "properties": {
            "name": {"type": "string", "description": "…/reasoningEngines/{engine}/sessions/{id}, in the form asked"},
            "userId": {"type": "string"}, "sessionState": {"type": "object", "description": "Merged: session, app: and user: keys"},
            "createTime": {"type": "string", "format": "date-time"}, "updateTime": {"type": "string", "format": "date-time"},
            "expireTime": {"type": "string", "format": "date-time"}, "displayName": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "agentstateEvents": {"type": "array", "items": {"$ref": "#/components/schemas/VertexEvent"},
                "description": "agentstate extension, with ?agentstateEvents=true: the events, read with the session (name, timestamp and rawEvent only)"}}},
        "VertexSessionList": {"type": "object", "properties": {
            "sessions": {"type": "array", "items": {"$ref": "#/components/schemas/VertexSession"}},
            "nextPageToken": {"type": "string"}}},
        "VertexEvent": {"type": "object", "properties": {
            "name": {"type": "string"}, "author": {"type": "string"}, "invocationId": {"type": "string"},
            "timestamp": {"type": "string", "format": "date-time"}, "content": {"type": "object"},
            "actions": {"type": "object", "properties": {"stateDelta": {"type": "object"}, "artifactDelta": {"type": "object"},
                "transferAgent": {"type": "string"}, "escalate": {"type": "boolean"}, "skipSummarization": {"type": "boolean"}}},
            "errorCode": {"type": "string"}, "errorMessage": {"type": "string"}, "eventMetadata": {"type": "object"},
            "rawEvent": {"type": "object", "description": "The whole ADK event (camelCase)"},
            "agentstateDuplicate": {"type": "boolean", "description": "agentstate extension, answering an append from agentstate's client: the same event was stored already; nothing changed"}},
            "description": "Nested field names in camelCase or snake_case; unknown fields ignored"},
        "VertexEventList": {"type": "object", "properties": {
            "sessionEvents": {"type": "array", "items": {"$ref": "#/components/schemas/VertexEvent"}},
            "nextPageToken": {"type": "string"}}},
        "VertexOperation": {"type": "object", "required": ["name", "done"], "properties": {
            "name": {"type": "string"}, "done": {"type": "boolean"}, "response": {"type": "object"}}},
        "Null": {"type": "null"},
        "Metrics": {"type": "string", "description": "Prometheus text exposition format"},
    });
    for more in [history_schemas(), memory_schemas(), memory_bank_schemas(), crate::artifact_schemas::schemas()] {
        if let (Value::Object(all), Value::Object(more)) = (&mut schemas, more) {
            all.extend(more);
        }
    }
    schemas
}

/// The schemas of the memory routes.
fn memory_schemas() -> Value {
    json!({
        "Memory": {"type": "object", "required": ["id", "content", "customMetadata", "createTime"], "description": "ADK's MemoryEntry, and where it came from",
            "properties": {"id": {"type": "string", "description": "The event's id, or the caller's or a generated one"},
                "content": {"type": "object"}, "customMetadata": {"type": "object"},
                "author": {"type": ["string", "null"]}, "timestamp": {"type": ["string", "null"], "description": "ISO 8601"},
                "sessionId": {"type": ["string", "null"], "description": "The session it came from"},
                "createTime": {"type": "string", "format": "date-time"},
                "expireTime": {"type": "string", "format": "date-time", "description": "Present when it expires"}}},
        "MemoryList": {"type": "object", "required": ["memories"], "properties": {
            "memories": {"type": "array", "items": {"$ref": "#/components/schemas/Memory"}},
            "nextPageToken": {"type": "string", "description": "Listing: pass as pageToken for the next page; absent on the last"}}},
        "UpdateMemoryRequest": {"type": "object", "required": ["sessionId"], "properties": {"sessionId": {"type": "string"}}},
        "MemorySessionRequest": {"type": "object", "required": ["events"], "properties": {
            "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
            "customMetadata": {"type": ["object", "null"], "description": "Kept on each memory; `ttl` (seconds or \"3600s\") makes them expire"}}},
        "MemoryEventsRequest": {"type": "object", "required": ["events"], "properties": {
            "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}},
            "sessionId": {"type": ["string", "null"], "description": "add_events_to_memory: the session they belong to"},
            "customMetadata": {"type": ["object", "null"], "description": "Kept on each memory; `ttl` (seconds or \"3600s\") makes them expire"}}},
        "AddMemoriesRequest": {"type": "object", "required": ["memories"], "properties": {
            "memories": {"type": "array", "items": {"type": "object", "required": ["content"], "properties": {
                "id": {"type": ["string", "null"]}, "content": {"type": "object"}, "customMetadata": {"type": ["object", "null"]},
                "author": {"type": ["string", "null"]}, "timestamp": {"type": ["string", "null"]}}}},
            "customMetadata": {"type": ["object", "null"], "description": "Kept on each memory (a memory's own keys win); `ttl` makes them expire"}}}
    })
}

/// The schemas of the history routes (a second `json!`: one would exceed the macro's recursion
/// limit).
fn history_schemas() -> Value {
    json!({
        "HistoryState": {"type": "object", "required": ["eventId", "timestamp", "state"], "properties": {
            "eventId": {"type": ["string", "null"], "description": "The last event applied; null at creation"},
            "timestamp": {"type": "number", "description": "Its time (or the creation time), epoch seconds"},
            "state": {"type": "object", "description": "Session keys, and app:/user: keys as this session set them"}}},
        "EventDiff": {"type": "object", "required": ["eventId", "timestamp", "changes"], "properties": {
            "eventId": {"type": "string"}, "timestamp": {"type": "number"}, "invocationId": {"type": "string"},
            "author": {"type": "string"},
            "changes": {"type": "array", "items": {"type": "object", "required": ["key", "change"], "properties": {
                "key": {"type": "string"}, "change": {"enum": ["set", "changed", "deleted"]},
                "before": {"description": "Absent when the key had no value"},
                "after": {"description": "Absent when the event deleted the key"}}}}}},
        "SessionPage": {"type": "object", "required": ["sessions"], "properties": {
            "sessions": {"type": "array", "items": {"$ref": "#/components/schemas/Session"}},
            "nextPageToken": {"type": "string"},
            "totalSize": {"type": "integer", "description": "With count=true: the sessions of every page together"}}},
        "AppendRequest": {"type": "object", "required": ["event"], "properties": {
            "event": {"$ref": "#/components/schemas/Event"},
            "expectedLastUpdateTime": {"type": ["number", "null"],
                "description": "The session's lastUpdateTime the caller's view was loaded at (epoch seconds); without it, a blind append retried on concurrent writers"}}},
        "Appended": {"type": "object", "required": ["event", "lastUpdateTime", "duplicate"], "properties": {
            "event": {"$ref": "#/components/schemas/Event"},
            "lastUpdateTime": {"type": "number", "description": "The session's update time after the append"},
            "duplicate": {"type": "boolean", "description": "The same event was stored already; nothing changed"}}},
        "RewindRequest": {"type": "object", "properties": {
            "rewindBeforeInvocationId": {"type": "string", "description": "Rewind to before this invocation's first event"},
            "rewindAfterEventId": {"type": "string", "description": "Rewind to just after this event"}},
            "oneOf": [{"required": ["rewindBeforeInvocationId"]}, {"required": ["rewindAfterEventId"]}]},
        "ForkRequest": {"type": "object", "required": ["atEventId"], "properties": {
            "atEventId": {"type": "string", "description": "The last event the fork keeps"},
            "sessionId": {"type": "string", "description": "The fork's id; generated if absent"}}},
    })
}

/// Memory Bank's bodies and answers (Agent Engine).
fn memory_bank_schemas() -> Value {
    json!({
        "VertexMemory": {"type": "object", "properties": {
            "name": {"type": "string", "description": "…/reasoningEngines/{engine}/memories/{id}, in the form asked"},
            "fact": {"type": "string"},
            "scope": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Matched exactly, e.g. {\"app_name\": …, \"user_id\": …}"},
            "displayName": {"type": "string"}, "description": {"type": "string"},
            "topics": {"type": "array", "items": {"type": "object"}},
            "metadata": {"type": "object", "additionalProperties": {"type": "object", "description": "One of stringValue, doubleValue, boolValue, timestampValue"}},
            "ttl": {"type": "string", "description": "Seconds from now, e.g. \"7200s\"; not with expireTime (written, not answered)"},
            "createTime": {"type": "string", "format": "date-time"}, "updateTime": {"type": "string", "format": "date-time"},
            "expireTime": {"type": "string", "format": "date-time"},
            "revisionLabels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Labels of this write's revision (written, not answered)"},
            "revisionTtl": {"type": "string", "description": "How long this write's revision is kept, e.g. \"86400s\"; not with revisionExpireTime (written, not answered)"},
            "revisionExpireTime": {"type": "string", "format": "date-time", "description": "When this write's revision expires (written, not answered)"},
            "disableMemoryRevisions": {"type": "boolean", "description": "Keep no revision of this write (written, not answered)"}},
            "description": "Field names in camelCase or snake_case"},
        "VertexMemoryRevision": {"type": "object", "properties": {
            "name": {"type": "string", "description": "…/memories/{id}/revisions/{revision}; revisions are numbered 1, 2, … in the order written"},
            "fact": {"type": "string", "description": "The memory's fact after the write"},
            "createTime": {"type": "string", "format": "date-time"},
            "expireTime": {"type": "string", "format": "date-time", "description": "The revision's own, else the memory's"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "extractedMemories": {"type": "array", "items": {"type": "object", "properties": {"fact": {"type": "string"}}}, "description": "What a generation extracted before consolidating"}}},
        "VertexMemoryRevisionList": {"type": "object", "properties": {
            "memoryRevisions": {"type": "array", "items": {"$ref": "#/components/schemas/VertexMemoryRevision"}},
            "nextPageToken": {"type": "string"}}},
        "VertexRollbackMemory": {"type": "object", "required": ["targetRevisionId"], "properties": {
            "targetRevisionId": {"type": "string"}}},
        "VertexRetrieveProfiles": {"type": "object", "required": ["scope"], "properties": {
            "scope": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "VertexProfiles": {"type": "object", "properties": {
            "profiles": {"type": "object", "description": "By schema id; empty: this server keeps no structured memory schemas"}}},
        "VertexMemoryList": {"type": "object", "properties": {
            "memories": {"type": "array", "items": {"$ref": "#/components/schemas/VertexMemory"}},
            "nextPageToken": {"type": "string"}}},
        "VertexRetrieveMemories": {"type": "object", "required": ["scope"], "properties": {
            "scope": {"type": "object", "additionalProperties": {"type": "string"}},
            "similaritySearchParams": {"type": "object", "properties": {"searchQuery": {"type": "string"}, "topK": {"type": "integer"}}},
            "simpleRetrievalParams": {"type": "object", "properties": {"pageSize": {"type": "integer"}, "pageToken": {"type": "string"}}}},
            "description": "Nested field names in camelCase or snake_case"},
        "VertexRetrievedMemories": {"type": "object", "properties": {
            "retrievedMemories": {"type": "array", "items": {"type": "object", "properties": {
                "memory": {"$ref": "#/components/schemas/VertexMemory"},
                "distance": {"type": "number", "description": "Similarity search only, smaller nearer: 1 - cosine similarity with embeddings, else the share of the query's words the memory lacks"}}}},
            "nextPageToken": {"type": "string", "description": "Simple retrieval only"}}},
        "VertexGenerateMemories": {"type": "object", "required": ["scope"], "properties": {
            "scope": {"type": "object", "additionalProperties": {"type": "string"}},
            "directMemoriesSource": {"type": "object", "properties": {"directMemories": {"type": "array", "items": {
                "type": "object", "properties": {"fact": {"type": "string"}}}}}},
            "directContentsSource": {"type": "object"}, "vertexSessionSource": {"type": "object"},
            "metadata": {"type": "object"}, "ttl": {"type": "string"}},
            "description": "Nested field names in camelCase or snake_case"},
        "VertexIngestEvents": {"type": "object", "properties": {
            "scope": {"type": "object", "additionalProperties": {"type": "string"}},
            "streamId": {"type": "string"}, "directContentsSource": {"type": "object"}}}
    })
}
