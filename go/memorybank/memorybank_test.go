// Package memorybank_test runs ADK for Go's Memory Bank service (memory/vertexai) against
// agentstate. ADK for Go 1.7 builds its Memory Bank client for the region's Google endpoint
// (REGION-aiplatform.googleapis.com:443) and takes no client options, so the client is reached
// the way any pinned endpoint is: through an HTTPS proxy (HTTPS_PROXY, which gRPC-Go honours)
// that tunnels to agentstate serving TLS with a certificate for that name from a CA the process
// trusts (SSL_CERT_FILE), and with a service-account key (GOOGLE_APPLICATION_CREDENTIALS) from
// which Google's client signs its own tokens, needing no network.
//
// Proxy, trust and credentials are read once per process, so they are set in TestMain, before
// any connection, and this package runs alone.
package memorybank_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	"google.golang.org/genai"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"google.golang.org/adk/memory"
	memoryvertexai "google.golang.org/adk/memory/vertexai"
	"google.golang.org/adk/session"
	sessionvertexai "google.golang.org/adk/session/vertexai"
	vertexaiutil "google.golang.org/adk/util/vertexai"

	"github.com/agentstate/agentstate/go/internal/testserver"
)

const (
	project  = "my-project"
	location = "us-central1"
	// The endpoint ADK for Go's Memory Bank client dials for location.
	endpoint = location + "-aiplatform.googleapis.com"
)

var (
	dir string
	// The proxy tunnels every CONNECT to target, and remembers the hosts asked for.
	proxy struct {
		sync.Mutex
		target string
		asked  []string
	}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if dir, err = os.MkdirTemp("", "agentstate-memorybank-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := serviceAccount(filepath.Join(dir, "service-account.json")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = http.Serve(listener, http.HandlerFunc(tunnel)) }()
	_ = os.Setenv("HTTPS_PROXY", "http://"+listener.Addr().String())
	_ = os.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(dir, "service-account.json"))
	_ = os.Setenv("SSL_CERT_FILE", filepath.Join(dir, "ca.pem"))
	return m.Run()
}

// serviceAccount writes a service-account key file of a fresh RSA key to path.
func serviceAccount(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	file, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     project,
		"private_key_id": "test-key",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "agent@" + project + ".iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      "https://oauth2.googleapis.com/token",
	})
	if err != nil {
		return err
	}
	return os.WriteFile(path, file, 0o600)
}

// tunnel answers CONNECT by joining the client to the proxy's target.
func tunnel(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	proxy.Lock()
	target := proxy.target
	proxy.asked = append(proxy.asked, r.Host)
	proxy.Unlock()
	upstream, err := net.Dial("tcp", target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, buffered, err := w.(http.Hijacker).Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	_, _ = client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	go func() {
		_, _ = io.Copy(upstream, buffered)
		_ = upstream.Close()
	}()
	_, _ = io.Copy(client, upstream)
	_ = client.Close()
}

// factModel is an OpenAI-compatible chat server keeping the extraction contract: a fact for
// each city the conversation names; consolidation creates every new fact.
func factModel(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) < 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var answer any
		if strings.HasPrefix(body.Messages[0].Content, "You extract memories") {
			facts := []string{}
			for _, city := range []string{"Lisbon", "Porto"} {
				if strings.Contains(body.Messages[1].Content, city) {
					facts = append(facts, "The user lives in "+city+".")
				}
			}
			answer = map[string]any{"facts": facts}
		} else {
			var given struct {
				New []string `json:"new"`
			}
			_ = json.Unmarshal([]byte(body.Messages[1].Content), &given)
			actions := []map[string]string{}
			for _, fact := range given.New {
				actions = append(actions, map[string]string{"action": "CREATED", "fact": fact})
			}
			answer = map[string]any{"actions": actions}
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "mock",
			"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": string(content)}, "finish_reason": "stop"}},
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// ADK for Go's Memory Bank service adds a session it keeps on agentstate to memory (the engine's
// model extracting the fact behind the operation it waits for) and finds the fact again, for
// that user only.
func TestADKGoMemoryBankServiceOnAgentstate(t *testing.T) {
	if testserver.External() {
		t.Skip("starts a TLS server of its own")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ca, cert, key := testserver.Certificates(t, dir, endpoint)
	if err := os.Rename(ca, filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	engine := fmt.Sprint(time.Now().UnixNano() % 1_000_000_000)
	srv := testserver.StartOpen(t, "sqlite", testserver.SQLite(t), []string{"OPENAI_API_KEY=sk-mock"},
		"--tls-cert", cert, "--tls-key", key, "--memory-model", engine+"=openai:mock@"+factModel(t))
	proxy.Lock()
	proxy.target = srv.Addr
	proxy.Unlock()

	// The conversation, kept on agentstate by ADK for Go's session service (given options).
	tls, err := credentials.NewClientTLSFromFile(filepath.Join(dir, "ca.pem"), "")
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := sessionvertexai.NewSessionService(ctx,
		sessionvertexai.VertexAIServiceConfig{ProjectID: project, Location: location, ReasoningEngine: engine},
		option.WithEndpoint(srv.Addr), option.WithGRPCDialOption(grpc.WithTransportCredentials(tls)),
		option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "unused"})))
	if err != nil {
		t.Fatal(err)
	}
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: engine, UserID: "ana"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	said := session.NewEvent("inv-1")
	said.Author = "user"
	said.Content = genai.NewContentFromText("I live in Lisbon these days", genai.RoleUser)
	if err := sessions.AppendEvent(ctx, created.Session, said); err != nil {
		t.Fatalf("append: %v", err)
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: engine, UserID: "ana", SessionID: created.Session.ID()})
	if err != nil {
		t.Fatalf("get: %v", err)
	}

	// ADK for Go's Memory Bank service, as it is: no options, the Google endpoint.
	memories, err := memoryvertexai.NewService(ctx, &memoryvertexai.ServiceConfig{
		AgentEngineData:   vertexaiutil.AgentEngineData{ProjectID: project, Location: location, ReasoningEngine: engine},
		WaitForCompletion: true,
	})
	if err != nil {
		t.Fatalf("memory service: %v", err)
	}
	if err := memories.AddSessionToMemory(ctx, got.Session); err != nil {
		t.Fatalf("AddSessionToMemory: %v", err)
	}
	found, err := memories.SearchMemory(ctx, &memory.SearchRequest{AppName: engine, UserID: "ana", Query: "where does the user live"})
	if err != nil {
		t.Fatalf("SearchMemory: %v", err)
	}
	var facts []string
	for _, m := range found.Memories {
		facts = append(facts, m.Content.Parts[0].Text)
	}
	if len(facts) != 1 || facts[0] != "The user lives in Lisbon." {
		t.Errorf("SearchMemory(ana) = %q, want the fact the model extracted", facts)
	}
	other, err := memories.SearchMemory(ctx, &memory.SearchRequest{AppName: engine, UserID: "bo", Query: "where does the user live"})
	if err != nil || len(other.Memories) != 0 {
		t.Errorf("SearchMemory(bo) = %v, %v; want nothing: scopes never leak", other, err)
	}
	proxy.Lock()
	defer proxy.Unlock()
	for _, host := range proxy.asked {
		if host != endpoint+":443" {
			t.Errorf("the client asked the proxy for %s, want only %s:443", host, endpoint)
		}
	}
	if len(proxy.asked) == 0 {
		t.Error("the memory client did not go through the proxy")
	}
}
