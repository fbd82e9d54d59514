// ADK-TS's own Agent Engine client (`VertexAiSessionService`) pointed at an agentstate server: the
// genai API client of `@google-cloud/vertexai` with the server as its base URL and an API key (sent
// as `x-goog-api-key`, so no Google credentials are looked up).
import { AgentEngines } from '@google-cloud/vertexai/build/src/genai/agentengines.js';
import { ApiClient, NodeAuth, NodeDownloader, NodeUploader } from '@google/genai/vertex_internal';
import { VertexAiSessionService } from '@google/adk';

export function vertexSessions(baseUrl, apiKey = 'local-key') {
  const apiClient = new ApiClient({
    auth: new NodeAuth({ apiKey }),
    uploader: new NodeUploader(),
    downloader: new NodeDownloader(),
    project: 'my-project',
    location: 'us-central1',
    vertexai: true,
    httpOptions: { baseUrl },
  });
  return new AgentEngines(apiClient).sessions;
}

export function vertexService(baseUrl, apiKey) {
  return new VertexAiSessionService({ sessions: vertexSessions(baseUrl, apiKey), projectId: 'my-project', location: 'us-central1' });
}
