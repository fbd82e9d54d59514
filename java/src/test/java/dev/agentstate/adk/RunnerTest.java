package dev.agentstate.adk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.google.adk.JsonBaseModel;
import com.google.adk.agents.LlmAgent;
import com.google.adk.agents.RunConfig;
import com.google.adk.events.Event;
import com.google.adk.models.BaseLlm;
import com.google.adk.models.BaseLlmConnection;
import com.google.adk.models.LlmRequest;
import com.google.adk.models.LlmResponse;
import com.google.adk.runner.Runner;
import com.google.adk.sessions.BaseSessionService;
import com.google.adk.sessions.InMemorySessionService;
import com.google.adk.sessions.Session;
import com.google.adk.tools.Annotations.Schema;
import com.google.adk.tools.FunctionTool;
import com.google.adk.tools.ToolContext;
import com.google.genai.types.Content;
import com.google.genai.types.FunctionCall;
import com.google.genai.types.Part;
import io.reactivex.rxjava3.core.Flowable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * ADK for Java's Runner, an LLM agent with a tool writing user: and temp: keys, output_key and an
 * instruction reading {user:name}: two turns over ADK for Java's Agent Engine client on agentstate
 * store what they store over ADK for Java's InMemorySessionService and send the model the same
 * requests; 16 Runners at once each keep their own user: key.
 */
public class RunnerTest extends AgainstServers {
  private static final ObjectMapper JSON =
      JsonBaseModel.getMapper().copy().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);
  private static final Pattern NAMED = Pattern.compile("my name is (\\w+)");
  private static final Pattern MADE_UP_ID =
      Pattern.compile("(?:e-|adk-)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");


  /**
   * A model that answers from the request alone: a message naming someone makes it call
   * `remember`; a function response makes it confirm; anything else is answered with the system
   * instruction it was given, so what the instruction read from state is stored too.
   */
  static final class Scripted extends BaseLlm {
    final List<String> requests = Collections.synchronizedList(new ArrayList<>());

    Scripted() {
      super("scripted");
    }

    @Override
    public Flowable<LlmResponse> generateContent(LlmRequest request, boolean stream) {
      Map<String, Object> shown = new LinkedHashMap<>();
      shown.put("contents", request.contents());
      shown.put("instruction", request.config().flatMap(c -> c.systemInstruction()).orElse(null));
      shown.put(
          "tools",
          request.config().flatMap(c -> c.tools()).orElse(List.of()).stream()
              .flatMap(t -> t.functionDeclarations().orElse(List.of()).stream())
              .map(d -> d.name().orElse(""))
              .toList());
      requests.add(json(shown));
      return Flowable.just(answer(request));
    }

    private static LlmResponse answer(LlmRequest request) {
      Content last = request.contents().get(request.contents().size() - 1);
      List<Part> parts = last.parts().orElse(List.of());
      if (parts.stream().anyMatch(p -> p.functionResponse().isPresent())) {
        return reply("Noted.");
      }
      String said = parts.stream().map(p -> p.text().orElse("")).reduce("", String::concat);
      Matcher named = NAMED.matcher(said);
      if (named.find()) {
        FunctionCall call = FunctionCall.builder().name("remember").args(Map.of("name", named.group(1))).build();
        return LlmResponse.builder()
            .content(Content.builder().role("model").parts(List.of(Part.builder().functionCall(call).build())).build())
            .build();
      }
      String instruction =
          request.config().flatMap(c -> c.systemInstruction()).flatMap(Content::parts).orElse(List.of()).stream()
              .map(p -> p.text().orElse(""))
              .reduce("", String::concat);
      return reply("I was told: " + instruction);
    }

    private static LlmResponse reply(String text) {
      return LlmResponse.builder().content(Content.builder().role("model").parts(List.of(Part.fromText(text))).build()).build();
    }

    @Override
    public BaseLlmConnection connect(LlmRequest request) {
      throw new UnsupportedOperationException("the scripted model does not stream");
    }
  }

  /** Writes a user: key (every session of the user), a temp: key and a session key. */
  public static Map<String, Object> remember(@Schema(name = "name") String name, ToolContext toolContext) {
    toolContext.state().put("user:name", name);
    toolContext.state().put("temp:heard", "name " + name);
    toolContext.state().put("mentions", 1);
    return Map.of("saved", name);
  }

  private static String json(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Two turns in a new session of alice's; the model's requests and the session as stored. */
  private static List<String> conversation(String app, BaseSessionService sessions, List<String> requests) {
    Scripted llm = new Scripted();
    LlmAgent root =
        LlmAgent.builder()
            .name("assistant")
            .model(llm)
            .instruction("You help {user:name?}. Mentions so far: {mentions?}.")
            .tools(FunctionTool.create(RunnerTest.class, "remember"))
            .outputKey("last_reply")
            .build();
    Runner runner = Runner.builder().agent(root).appName(app).sessionService(sessions).build();
    Session session = sessions.createSession(app, "alice", Map.of("topic", "trips"), null).blockingGet();
    for (String said : List.of("Hello, my name is Ann", "What do you know about me?")) {
      Content message = Content.builder().role("user").parts(List.of(Part.fromText(said))).build();
      runner.runAsync("alice", session.id(), message, RunConfig.builder().build()).blockingSubscribe();
    }
    Session stored = sessions.getSession(app, "alice", session.id(), Optional.empty()).blockingGet();
    Names names = new Names();
    for (String r : llm.requests) {
      requests.add(names.replace(r));
    }
    List<String> events = new ArrayList<>();
    for (Event e : stored.events()) {
      events.add(names.replace(json(view(e))));
    }
    events.add(json(persisted(stored.state())));
    return events;
  }

  /**
   * State (or a state delta) as a session service keeps it: without temp: keys. ADK for Java's
   * InMemorySessionService keeps them on the stored event and in the session's state; a temp: key
   * lives for one invocation (ADK's documented scope, which ADK for Python's and ADK for Go's
   * persistent services keep), so agentstate, like the managed service, stores none.
   */
  private static Map<String, Object> persisted(Map<String, Object> state) {
    Map<String, Object> kept = new TreeMap<>(state);
    kept.keySet().removeIf(k -> k.startsWith("temp:"));
    return kept;
  }

  /** The fields of an event a session service keeps (times compared by order only). */
  private static Map<String, Object> view(Event e) {
    Map<String, Object> v = new TreeMap<>();
    v.put("author", e.author());
    v.put("invocationId", e.invocationId());
    v.put("content", e.content().orElse(null));
    v.put("stateDelta", persisted(e.actions().stateDelta()));
    v.put("artifactDelta", new TreeMap<>(e.actions().artifactDelta()));
    v.put("transferToAgent", e.actions().transferToAgent().orElse(null));
    v.put("escalate", e.actions().escalate().orElse(false));
    v.put("skipSummarization", e.actions().skipSummarization().orElse(false));
    v.put("longRunningToolIds", e.longRunningToolIds().map(ids -> new java.util.TreeSet<>(ids)).orElse(null));
    v.put("partial", e.partial().orElse(false));
    v.put("turnComplete", e.turnComplete().orElse(false));
    v.put("interrupted", e.interrupted().orElse(false));
    v.put("branch", e.branch().orElse(null));
    v.put("errorCode", e.errorCode().map(Object::toString).orElse(null));
    v.put("errorMessage", e.errorMessage().orElse(null));
    v.put("groundingMetadata", e.groundingMetadata().orElse(null));
    return v;
  }

  /** Replaces the ids a run makes up by their order of first appearance. */
  private static final class Names {
    private final Map<String, String> seen = new LinkedHashMap<>();

    String replace(String s) {
      Matcher m = MADE_UP_ID.matcher(s);
      StringBuilder out = new StringBuilder();
      while (m.find()) {
        String id = m.group();
        String name = seen.computeIfAbsent(id, k -> k.substring(0, k.indexOf('-')) + "#" + (seen.size() + 1));
        m.appendReplacement(out, Matcher.quoteReplacement(name));
      }
      m.appendTail(out);
      return out.toString();
    }
  }

  private List<String> wantRequests;
  private List<String> wantStored;

  @Test
  void theInMemoryRunDoesWhatTheScenarioSays() {
    inMemory();
    assertEquals(3, wantRequests.size(), String.join("\n", wantRequests));
    assertTrue(wantRequests.get(2).contains("You help Ann."), wantRequests.get(2));
    String state = wantStored.get(wantStored.size() - 1);
    assertTrue(state.contains("\"user:name\":\"Ann\"") && state.contains("\"mentions\":1"), state);
  }

  private void inMemory() {
    if (wantRequests == null) {
      wantRequests = new ArrayList<>();
      wantStored = conversation("4242", new InMemorySessionService(), wantRequests);
    }
  }

  @ParameterizedTest
  @MethodSource("servers")
  void storesWhatInMemoryStores(AgentstateServer server) {
    inMemory();
    List<String> requests = new ArrayList<>();
    List<String> stored = conversation(AgentstateServer.freshEngine(), server.sessions(), requests);
    assertEquals(String.join("\n", wantRequests), String.join("\n", requests), "the model's requests");
    assertEquals(String.join("\n", wantStored), String.join("\n", stored), "the stored session");
  }

  /** Calls `mark` with its index, then says it is done. */
  static final class Marker extends BaseLlm {
    private final int index;

    Marker(int index) {
      super("marker");
      this.index = index;
    }

    @Override
    public Flowable<LlmResponse> generateContent(LlmRequest request, boolean stream) {
      Content last = request.contents().get(request.contents().size() - 1);
      if (last.parts().orElse(List.of()).stream().anyMatch(p -> p.functionResponse().isPresent())) {
        return Flowable.just(Scripted.reply("done"));
      }
      FunctionCall call = FunctionCall.builder().name("mark").args(Map.of("index", index)).build();
      return Flowable.just(
          LlmResponse.builder()
              .content(Content.builder().role("model").parts(List.of(Part.builder().functionCall(call).build())).build())
              .build());
    }

    @Override
    public BaseLlmConnection connect(LlmRequest request) {
      throw new UnsupportedOperationException("the marker does not stream");
    }
  }

  public static Map<String, Object> mark(@Schema(name = "index") int index, ToolContext toolContext) {
    toolContext.state().put(String.format("user:mark%02d", index), index);
    return Map.of("ok", true);
  }

  @ParameterizedTest
  @MethodSource("servers")
  void sixteenRunnersKeepEveryUserKey(AgentstateServer server) throws Exception {
    String app = AgentstateServer.freshEngine();
    BaseSessionService sessions = server.sessions();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> runs = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        int index = i;
        runs.add(
            pool.submit(
                () -> {
                  LlmAgent root =
                      LlmAgent.builder().name("marker").model(new Marker(index)).tools(FunctionTool.create(RunnerTest.class, "mark")).build();
                  Runner runner = Runner.builder().agent(root).appName(app).sessionService(sessions).build();
                  Session s = sessions.createSession(app, "bob", Map.of(), null).blockingGet();
                  Content message = Content.builder().role("user").parts(List.of(Part.fromText("mark"))).build();
                  runner.runAsync("bob", s.id(), message, RunConfig.builder().build()).blockingSubscribe();
                  return null;
                }));
      }
      for (Future<?> run : runs) {
        run.get();
      }
    } finally {
      pool.shutdown();
    }
    Session fresh = sessions.createSession(app, "bob", Map.of(), null).blockingGet();
    List<String> kept = fresh.state().keySet().stream().filter(k -> k.startsWith("user:mark")).sorted().toList();
    assertEquals(16, kept.size(), "user: keys kept: " + kept);
  }
}
