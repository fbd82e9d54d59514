package dev.agentstate.adk;

import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * Tests run against every server {@link AgentstateServer#all()} answers, started once for the
 * class; a parameterized test takes them with {@code @MethodSource("servers")}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AgainstServers {
  private List<AgentstateServer> servers;

  @BeforeAll
  void startServers() throws Exception {
    servers = AgentstateServer.all();
  }

  @AfterAll
  void stopServers() throws Exception {
    for (AgentstateServer s : servers) {
      s.stop();
    }
  }

  List<AgentstateServer> servers() {
    return servers;
  }
}
