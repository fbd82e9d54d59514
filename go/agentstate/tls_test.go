package agentstate_test

import (
	"errors"
	"testing"

	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"google.golang.org/adk/session"
	"google.golang.org/adk/session/vertexai"

	"github.com/agentstate/agentstate/go/internal/testserver"
)

// Over TLS (`serve --tls-cert --tls-key`) ADK for Go's client needs none of this module's
// options: Google's own (the endpoint, the server's CA as transport credentials, a token source)
// send the token as gRPC call credentials, which gRPC-Go sends only over transport security.
func TestTLSWithGooglesOwnOptions(t *testing.T) {
	if testserver.External() {
		t.Skip("starts a TLS server of its own")
	}
	ca, cert, key := testserver.Certificates(t, t.TempDir())
	srv := testserver.Start(t, "sqlite", testserver.SQLite(t), "--tls-cert", cert, "--tls-key", key)
	connect := func(token string) session.Service {
		tls, err := credentials.NewClientTLSFromFile(ca, "")
		if err != nil {
			t.Fatal(err)
		}
		opts := []option.ClientOption{
			option.WithEndpoint(srv.Addr),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(tls)),
			option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})),
		}
		cfg := vertexai.VertexAIServiceConfig{ProjectID: "my-project", Location: "us-central1", ReasoningEngine: freshEngine()}
		s, err := vertexai.NewSessionService(t.Context(), cfg, opts...)
		if err != nil {
			t.Fatalf("vertexai.NewSessionService: %v", err)
		}
		return s
	}

	s := connect(srv.Token)
	created, err := s.Create(t.Context(), &session.CreateRequest{AppName: suiteEngine, UserID: "alice", State: map[string]any{"topic": "trips"}})
	if err != nil {
		t.Fatalf("create over TLS: %v", err)
	}
	got, err := s.Get(t.Context(), &session.GetRequest{AppName: suiteEngine, UserID: "alice", SessionID: created.Session.ID()})
	if err != nil {
		t.Fatalf("get over TLS: %v", err)
	}
	if topic, err := got.Session.State().Get("topic"); err != nil || topic != "trips" {
		t.Errorf("state over TLS: topic = %v (%v), want trips", topic, err)
	}

	_, err = connect("not-"+srv.Token).Create(t.Context(), &session.CreateRequest{AppName: suiteEngine, UserID: "alice"})
	if status.Code(errors.Unwrap(errors.Unwrap(err))) != codes.Unauthenticated && status.Code(err) != codes.Unauthenticated {
		t.Errorf("a wrong token over TLS: %v, want UNAUTHENTICATED", err)
	}
}
