package dev.agentstate.adk;

import com.google.adk.sessions.VertexAiSessionService;
import com.google.auth.oauth2.AccessToken;
import com.google.auth.oauth2.GoogleCredentials;
import com.google.genai.types.HttpOptions;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * `agentstate serve` for the tests: one process per backend (SQLite on a throwaway file, PostgreSQL
 * in a throwaway database, Redis under a throwaway key prefix), each on a spare loopback port with a
 * token, or the server named by AGENTSTATE_URL (with AGENTSTATE_TOKEN) when one is already up.
 *
 * <p>The binary is AGENTSTATE_BIN, else the repository's target/debug/agentstate; the database
 * servers are the local ones `.ci/services` starts, or AGENTSTATE_TEST_POSTGRES (administrative,
 * as postgres://user@host:port/db) and AGENTSTATE_TEST_REDIS.
 */
final class AgentstateServer {
  static final String TOKEN = "java-suite-token-0123456789abcdef";
  private static final Pattern ADDR = Pattern.compile("addr=(\\S+)");
  private static final AtomicLong ENGINES = new AtomicLong();
  private static final SecureRandom RANDOM = new SecureRandom();

  final String backend;
  final String url;
  final String token;
  private final Process process;

  private AgentstateServer(String backend, String url, String token, Process process) {
    this.backend = backend;
    this.url = url;
    this.token = token;
    this.process = process;
  }

  /** The servers a test runs against: AGENTSTATE_URL alone when set, else one per backend. */
  static List<AgentstateServer> all() throws Exception {
    String external = System.getenv("AGENTSTATE_URL");
    if (external != null && !external.isEmpty()) {
      String token = System.getenv().getOrDefault("AGENTSTATE_TOKEN", "");
      return List.of(new AgentstateServer("external", external.replaceAll("/+$", ""), token, null));
    }
    List<AgentstateServer> servers = new ArrayList<>();
    servers.add(start("sqlite", sqlite()));
    servers.add(start("postgres", postgres()));
    servers.add(start("redis", redis()));
    return servers;
  }

  /** ADK for Java's Agent Engine session client on this server, as a user builds it. */
  VertexAiSessionService sessions() {
    return new VertexAiSessionService(
        "my-project",
        "us-central1",
        GoogleCredentials.create(new AccessToken(token, null)),
        HttpOptions.builder().baseUrl(url).build());
  }

  /** An engine (app) id no other test of this run uses: digits, as ADK for Java requires. */
  static String freshEngine() {
    return Long.toString(9_000_000_000L + (RANDOM.nextInt(1_000_000) * 1000L) + ENGINES.incrementAndGet());
  }

  static AgentstateServer start(String backend, String db) throws Exception {
    String bin = System.getenv("AGENTSTATE_BIN");
    if (bin == null || bin.isEmpty()) {
      bin = Path.of("..", "target", "debug", "agentstate").toAbsolutePath().normalize().toString();
    }
    if (!Files.isExecutable(Path.of(bin))) {
      throw new IllegalStateException(
          "no agentstate binary at " + bin + ": build it (`cargo build -p agentstate-server`) or set AGENTSTATE_BIN");
    }
    ProcessBuilder builder = new ProcessBuilder(bin, "serve", "--db", db, "--addr", "127.0.0.1:0");
    Map<String, String> env = builder.environment();
    env.keySet().removeIf(k -> k.startsWith("AGENTSTATE_"));
    env.put("AGENTSTATE_TOKENS", "{\"tokens\": [{\"token\": \"" + TOKEN + "\", \"apps\": \"*\", \"admin\": true}]}");
    env.put("RUST_LOG", "info");
    builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Process process = builder.start();
    CompletableFuture<String> addr = new CompletableFuture<>();
    StringBuilder log = new StringBuilder();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader lines =
                  new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                  Matcher m = ADDR.matcher(line);
                  if (!addr.isDone() && m.find()) {
                    addr.complete(m.group(1));
                  }
                  synchronized (log) {
                    if (log.length() < 65536) {
                      log.append(line).append('\n');
                    }
                  }
                }
              } catch (IOException e) {
                addr.completeExceptionally(e);
              }
              addr.completeExceptionally(new IOException("agentstate serve exited"));
            });
    reader.setDaemon(true);
    reader.start();
    try {
      return new AgentstateServer(backend, "http://" + addr.get(60, TimeUnit.SECONDS), TOKEN, process);
    } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
      process.destroyForcibly();
      synchronized (log) {
        throw new IllegalStateException("agentstate serve --db " + backend + " did not start:\n" + log, e);
      }
    }
  }

  static String unique(String prefix) {
    byte[] bytes = new byte[8];
    RANDOM.nextBytes(bytes);
    return prefix + HexFormat.of().formatHex(bytes);
  }

  static String sqlite() throws IOException {
    Path dir = Files.createTempDirectory("agentstate-java-");
    dir.toFile().deleteOnExit();
    return "sqlite://" + dir.resolve("sessions.db");
  }

  /** A new, empty PostgreSQL database (agentstate_test_…, dropped later by `.ci/services`). */
  static String postgres() throws SQLException {
    String admin = System.getenv().getOrDefault("AGENTSTATE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test");
    Matcher m = Pattern.compile("postgres(?:ql)?://(?:([^@:/]+)(?::([^@/]*))?@)?([^/?]+)/([^?]+)").matcher(admin);
    if (!m.matches()) {
      throw new IllegalArgumentException("AGENTSTATE_TEST_POSTGRES is not a postgres:// URL: " + admin);
    }
    String name = unique("agentstate_test_");
    String jdbc = "jdbc:postgresql://" + m.group(3) + "/" + m.group(4);
    try (var conn = DriverManager.getConnection(jdbc, m.group(1), m.group(2) == null ? "" : m.group(2));
        var statement = conn.createStatement()) {
      statement.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new SQLException(
          "PostgreSQL at " + admin + " is required for these tests (start it with .ci/services)", e);
    }
    return admin.substring(0, admin.lastIndexOf('/') + 1) + name;
  }

  /** The Redis test server with a key prefix of this run's own. */
  static String redis() {
    String url = System.getenv().getOrDefault("AGENTSTATE_TEST_REDIS", "redis://127.0.0.1:6379/0");
    String prefix = "agentstate-test-" + (System.currentTimeMillis() / 1000) + "-" + unique("java") + ":";
    return url + (url.contains("?") ? "&" : "?") + "prefix=" + prefix;
  }

  static Duration timeout() {
    return Duration.ofSeconds(60);
  }

  /** Stops the server (not AutoCloseable: JUnit closes a parameterized test's arguments after each case). */
  void stop() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(30, TimeUnit.SECONDS);
    }
  }

  @Override
  public String toString() {
    return backend;
  }
}
