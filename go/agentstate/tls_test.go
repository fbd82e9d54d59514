package agentstate_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	ca, cert, key := certificates(t, t.TempDir())
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

// certificates writes a CA and a P-256 certificate for 127.0.0.1 it signed (PKCS#8 key) into
// dir: the paths of the CA, the certificate and the key.
func certificates(t *testing.T, dir string) (caPath, certPath, keyPath string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentstate test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTemplate, caTemplate, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", leafDER), write("server.key", "PRIVATE KEY", keyDER)
}
