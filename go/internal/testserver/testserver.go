// Package testserver starts `agentstate serve` for the Go tests: one process per backend
// (SQLite on a throwaway file, PostgreSQL in a throwaway database, Redis under a throwaway key
// prefix), each on a spare loopback port with a token of its own, or the one server named by
// AGENTSTATE_ADDR (with AGENTSTATE_TOKEN) when the tests run against a server already up.
//
// The binary is AGENTSTATE_BIN, else the repository's target/debug/agentstate. The database
// servers are the local ones `.ci/services` starts, or AGENTSTATE_TEST_POSTGRES (an
// administrative URL) and AGENTSTATE_TEST_REDIS.
package testserver

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Token is the bearer token every server these tests start accepts (every app, every user).
const Token = "go-suite-token-0123456789abcdef"

// Server is an agentstate server the tests talk to.
type Server struct {
	// Backend names the database behind it: "sqlite", "postgres", "redis", or "external".
	Backend string
	// Addr is host:port, serving gRPC and REST.
	Addr string
	// Token is a bearer token it accepts for every app and user ("" when it has none).
	Token string
	// DB is its --db URL ("" for an external server).
	DB string
}

// URL is the server's REST base URL.
func (s *Server) URL() string { return "http://" + s.Addr }

// Servers answers the servers a suite runs against: AGENTSTATE_ADDR alone when it is set,
// else one started per backend, stopped when the test ends.
func Servers(t *testing.T) []*Server {
	t.Helper()
	if External() {
		return []*Server{{Backend: "external", Addr: os.Getenv("AGENTSTATE_ADDR"), Token: os.Getenv("AGENTSTATE_TOKEN")}}
	}
	return []*Server{
		Start(t, "sqlite", SQLite(t)),
		Start(t, "postgres", Postgres(t)),
		Start(t, "redis", Redis(t)),
	}
}

// External tells whether the tests run against a server already up (AGENTSTATE_ADDR).
func External() bool { return os.Getenv("AGENTSTATE_ADDR") != "" }

// Binary is the agentstate binary the tests start.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("AGENTSTATE_BIN")
	if bin == "" {
		_, file, _, _ := runtime.Caller(0)
		bin = filepath.Join(filepath.Dir(file), "..", "..", "..", "target", "debug", "agentstate")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no agentstate binary at %s: build it (`cargo build -p agentstate-server`) or set AGENTSTATE_BIN", bin)
	}
	return bin
}

// Start runs `agentstate serve --db db` on a spare loopback port with [Token]; it is killed
// when the test ends.
func Start(t *testing.T, backend, db string, extra ...string) *Server {
	t.Helper()
	tokens, err := json.Marshal(map[string]any{"tokens": []map[string]any{{"token": Token, "apps": "*", "admin": true}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, backend, db, []string{"AGENTSTATE_TOKENS=" + string(tokens)}, extra)
	srv.Token = Token
	return srv
}

// StartOpen is [Start] without tokens (every caller may do everything) and with env added to
// the server's environment.
func StartOpen(t *testing.T, backend, db string, env []string, extra ...string) *Server {
	t.Helper()
	return start(t, backend, db, env, extra)
}

func start(t *testing.T, backend, db string, env, extra []string) *Server {
	t.Helper()
	args := append([]string{"serve", "--db", db, "--addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(append(withoutAgentstate(os.Environ()), env...), "RUST_LOG=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting agentstate serve: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	var log strings.Builder
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 64*1024), 1024*1024)
		for lines.Scan() {
			line := lines.Text()
			if _, after, ok := strings.Cut(line, "addr="); ok {
				select {
				case found <- strings.Fields(after)[0]:
				default:
				}
			}
			if log.Len() < 64*1024 {
				log.WriteString(line + "\n")
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case addr := <-found:
		return &Server{Backend: backend, Addr: addr, DB: db}
	case <-time.After(60 * time.Second):
		t.Fatalf("agentstate serve --db %s did not report its address in 60 s:\n%s", backend, log.String())
		return nil
	}
}

func withoutAgentstate(env []string) []string {
	kept := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AGENTSTATE_") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// Unique is a name no other test run uses: a prefix and 16 random hex digits.
func Unique(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// SQLite is the URL of a new SQLite file in the test's temporary directory.
func SQLite(t *testing.T) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "sessions.db")
}

// PostgresAdmin is the administrative URL of the PostgreSQL test server.
func PostgresAdmin() string {
	if url := os.Getenv("AGENTSTATE_TEST_POSTGRES"); url != "" {
		return url
	}
	return "postgres://postgres@127.0.0.1:5432/test"
}

// Postgres creates an empty database (agentstate_test_…, which `.ci/services` drops later) on
// the PostgreSQL test server; its URL.
func Postgres(t testing.TB) string {
	t.Helper()
	admin := PostgresAdmin()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("PostgreSQL at %s is required for these tests (start it with .ci/services): %v", admin, err)
	}
	defer func() { _ = conn.Close(ctx) }()
	name := Unique("agentstate_test_")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating the test database %s: %v", name, err)
	}
	return WithDatabase(admin, name)
}

// WithDatabase is url with its database replaced by db (the query kept).
func WithDatabase(url, db string) string {
	base, query, hasQuery := strings.Cut(url, "?")
	if i := strings.LastIndex(base, "/"); i > len("postgres://") {
		base = base[:i]
	}
	if hasQuery {
		return fmt.Sprintf("%s/%s?%s", base, db, query)
	}
	return base + "/" + db
}

// Redis is the URL of the Redis test server with a key prefix of this test's own.
func Redis(t testing.TB) string {
	url := os.Getenv("AGENTSTATE_TEST_REDIS")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	// The form the Redis crate's tests sweep a day later.
	prefix := fmt.Sprintf("agentstate-test-%d-%s:", time.Now().Unix(), Unique("go"))
	separator := "?"
	if strings.Contains(url, "?") {
		separator = "&"
	}
	return url + separator + "prefix=" + prefix
}

// Certificates writes a CA and a P-256 certificate it signed (PKCS#8 key) for 127.0.0.1,
// localhost and the other names given into dir: the paths of the CA, the certificate and the key.
func Certificates(t testing.TB, dir string, names ...string) (caPath, certPath, keyPath string) {
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
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: append([]string{"localhost"}, names...),
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
