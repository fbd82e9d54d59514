package dev.agentstate.adk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.adk.events.Event;
import com.google.adk.events.EventActions;
import com.google.adk.sessions.GetSessionConfig;
import com.google.adk.sessions.Session;
import com.google.adk.sessions.VertexAiSessionService;
import com.google.genai.types.Content;
import com.google.genai.types.FunctionCall;
import com.google.genai.types.FunctionResponse;
import com.google.genai.types.Part;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * ADK for Java's Agent Engine session client ({@code VertexAiSessionService}, REST) against
 * agentstate on each backend: what a session service owes ADK's Runner, through that client.
 */
class SessionServiceTest extends AgainstServers {

  private static Event event(String author, String invocation, long millis, Content content, Map<String, Object> delta) {
    return Event.builder()
        .id(Event.generateEventId())
        .author(author)
        .invocationId(invocation)
        .timestamp(millis)
        .content(content)
        .actions(EventActions.builder().stateDelta(new ConcurrentHashMap<>(delta)).build())
        .build();
  }

  private static Content text(String role, String text) {
    return Content.builder().role(role).parts(List.of(Part.fromText(text))).build();
  }

  @ParameterizedTest
  @MethodSource("servers")
  void createGetListAndDelete(AgentstateServer server) {
    VertexAiSessionService sessions = server.sessions();
    String app = AgentstateServer.freshEngine();
    Session created =
        sessions.createSession(app, "alice", Map.of("topic", "trips", "user:lang", "pt", "app:tier", 2), null).blockingGet();
    assertFalse(created.id().isEmpty());
    assertEquals(app, created.appName());
    assertEquals("alice", created.userId());
    assertEquals("trips", created.state().get("topic"));
    assertEquals("pt", created.state().get("user:lang"));

    Session got = sessions.getSession(app, "alice", created.id(), Optional.empty()).blockingGet();
    assertNotNull(got);
    assertEquals(created.id(), got.id());
    assertEquals(Map.of("topic", "trips", "user:lang", "pt", "app:tier", 2), Map.copyOf(got.state()));
    assertTrue(got.events().isEmpty());
    assertNotNull(got.lastUpdateTime());

    // A second session of alice's sees her user: key and the app: key; bob sees only the app: key.
    Session second = sessions.createSession(app, "alice", null, null).blockingGet();
    assertEquals("pt", second.state().get("user:lang"));
    Session bobs = sessions.createSession(app, "bob", null, null).blockingGet();
    assertNull(bobs.state().get("user:lang"));
    assertEquals(2, bobs.state().get("app:tier"));

    // The list is the user's (a quoted user_id filter), with their state.
    List<String> alices =
        sessions.listSessions(app, "alice").blockingGet().sessions().stream().map(Session::id).sorted().toList();
    assertEquals(List.of(created.id(), second.id()).stream().sorted().toList(), alices);
    assertEquals(1, sessions.listSessions(app, "bob").blockingGet().sessions().size());
    assertTrue(sessions.listSessions(app, "carol").blockingGet().sessions().isEmpty());

    // Another user's session is not found, and cannot be deleted by them.
    assertNull(sessions.getSession(app, "bob", created.id(), Optional.empty()).blockingGet());
    assertThrows(SecurityException.class, () -> sessions.deleteSession(app, "bob", created.id()).blockingAwait());
    sessions.deleteSession(app, "alice", created.id()).blockingAwait();
    assertNull(sessions.getSession(app, "alice", created.id(), Optional.empty()).blockingGet());
    // Deleting what is gone: the client reads the 404's error body as a session of nobody's, as it
    // does against the managed service.
    assertThrows(SecurityException.class, () -> sessions.deleteSession(app, "alice", created.id()).blockingAwait());
  }

  @ParameterizedTest
  @MethodSource("servers")
  void eventsComeBackAsAppended(AgentstateServer server) {
    VertexAiSessionService sessions = server.sessions();
    String app = AgentstateServer.freshEngine();
    Session session = sessions.createSession(app, "alice", Map.of(), null).blockingGet();
    long t0 = Instant.parse("2026-01-02T03:04:05.123Z").toEpochMilli();
    Content call =
        Content.builder()
            .role("model")
            .parts(List.of(Part.builder().functionCall(FunctionCall.builder().id("call-1").name("lookup").args(Map.of("q", "Lisbon")).build()).build()))
            .build();
    Content response =
        Content.builder()
            .role("user")
            .parts(List.of(Part.builder().functionResponse(FunctionResponse.builder().id("call-1").name("lookup").response(Map.of("found", true)).build()).build()))
            .build();
    List<Event> appended =
        List.of(
            event("user", "inv-1", t0, text("user", "Find Lisbon"), Map.of()),
            event("assistant", "inv-1", t0 + 1000, call, Map.of()),
            event("assistant", "inv-1", t0 + 2000, response, Map.of("visits", 1, "user:city", "Lisbon", "temp:scratch", "x")),
            event("assistant", "inv-1", t0 + 3000, text("model", "Found it."), Map.of("visits", 2)));
    for (Event e : appended) {
      sessions.appendEvent(session, e).blockingGet();
    }
    // The client applies each delta to its handle (temp: keys included, for the invocation).
    assertEquals(2, session.state().get("visits"));

    Session got = sessions.getSession(app, "alice", session.id(), Optional.empty()).blockingGet();
    assertEquals(4, got.events().size());
    for (int i = 0; i < appended.size(); i++) {
      Event want = appended.get(i);
      Event have = got.events().get(i);
      assertEquals(want.author(), have.author(), "author of event " + i);
      assertEquals(want.invocationId(), have.invocationId(), "invocation of event " + i);
      assertEquals(want.timestamp(), have.timestamp(), "timestamp of event " + i);
      assertEquals(want.content(), have.content(), "content of event " + i);
    }
    assertEquals(Map.of("visits", 1, "user:city", "Lisbon"), Map.copyOf(got.events().get(2).actions().stateDelta()));
    assertEquals(Map.of("visits", 2, "user:city", "Lisbon"), Map.copyOf(got.state()));

    // The newest N, and those at or after a time (the client sends timestamp>="<Instant>").
    GetSessionConfig recent = GetSessionConfig.builder().numRecentEvents(2).build();
    assertEquals(
        List.of(t0 + 2000, t0 + 3000),
        sessions.getSession(app, "alice", session.id(), Optional.of(recent)).blockingGet().events().stream()
            .map(Event::timestamp)
            .collect(Collectors.toList()));
    GetSessionConfig after = GetSessionConfig.builder().afterTimestamp(Instant.ofEpochMilli(t0 + 1000)).build();
    assertEquals(3, sessions.getSession(app, "alice", session.id(), Optional.of(after)).blockingGet().events().size());

    // listEvents answers the whole history in one page (the client reads one).
    assertEquals(4, sessions.listEvents(app, "alice", session.id()).blockingGet().events().size());
  }

  @ParameterizedTest
  @MethodSource("servers")
  void aLongHistoryLoadsWhole(AgentstateServer server) {
    VertexAiSessionService sessions = server.sessions();
    String app = AgentstateServer.freshEngine();
    Session session = sessions.createSession(app, "alice", Map.of(), null).blockingGet();
    long t0 = Instant.parse("2026-01-02T00:00:00Z").toEpochMilli();
    for (int i = 0; i < 130; i++) {
      sessions.appendEvent(session, event("user", "inv-" + i, t0 + i, text("user", "message " + i), Map.of())).blockingGet();
    }
    Session got = sessions.getSession(app, "alice", session.id(), Optional.empty()).blockingGet();
    assertEquals(130, got.events().size());
    assertEquals("message 129", got.events().get(129).content().get().text());
  }
}
