package agentstate_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	aiplatform "cloud.google.com/go/aiplatform/apiv1beta1"
	"cloud.google.com/go/aiplatform/apiv1beta1/aiplatformpb"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/genai"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/adk/session"
	"google.golang.org/adk/session/sessiontestsuite"
	"google.golang.org/adk/session/vertexai"

	"github.com/agentstate/agentstate/go/agentstate"
	"github.com/agentstate/agentstate/go/internal/testserver"
)

// The engine id the suite names its app by: digits, as ADK for Go's client requires.
const suiteEngine = "4242"

var engines atomic.Int64

// freshEngine is an engine (app) id no other test of this process uses, so each case of the
// suite starts from an empty app, as it does against a new in-memory service.
func freshEngine() string {
	return fmt.Sprintf("%d%06d", 7000+engines.Add(1), testserverRun)
}

// testserverRun tells this process's engines from an earlier run's on a shared server.
var testserverRun = int(testserver.Unique("")[0]) * 997 % 1000000

// newService is ADK for Go's Agent Engine session service on srv, as a user builds it: its own
// constructor, with agentstate's client options.
func newService(t *testing.T, srv *testserver.Server, engine string) session.Service {
	t.Helper()
	cfg := vertexai.VertexAIServiceConfig{ProjectID: "my-project", Location: "us-central1", ReasoningEngine: engine}
	s, err := vertexai.NewSessionService(t.Context(), cfg, agentstate.ClientOptions(srv.Addr, srv.Token)...)
	if err != nil {
		t.Fatalf("vertexai.NewSessionService: %v", err)
	}
	return s
}

// ADK for Go's published session suite, through its own Agent Engine client, against agentstate
// on each backend. Each case gets an engine of its own (the config's ReasoningEngine), so the
// cases that count sessions see only their own; the suite's options are those ADK for Go runs its
// client with against Google.
func TestADKGoSessionSuite(t *testing.T) {
	for _, srv := range testserver.Servers(t) {
		t.Run(srv.Backend, func(t *testing.T) {
			opts := sessiontestsuite.SuiteOptions{
				SupportsUserProvidedSessionID: true,
				ProvidesServerAssignedEventID: true,
				AppName:                       suiteEngine,
			}
			sessiontestsuite.RunServiceTests(t, opts, func(t *testing.T) session.Service {
				return newService(t, srv, freshEngine())
			})
		})
	}
}

// A session whose history is over the 4 MB gRPC-Go accepts in one message by default loads whole:
// through ADK for Go's client (Google's generated client, which lifts that limit), and through the
// same client held to gRPC-Go's default, because ListEvents without a page size answers Google's
// default page over gRPC (100 events) and the client follows the page tokens.
func TestALongHistoryLoadsPageByPage(t *testing.T) {
	srv := testserver.Servers(t)[0]
	engine := freshEngine()
	s := newService(t, srv, engine)
	created, err := s.Create(t.Context(), &session.CreateRequest{AppName: engine, UserID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	const events = 130
	// 130 events of 16 KiB, carried twice by each (typed content and rawEvent): over 4 MB in all,
	// a page of 100 under it.
	text := strings.Repeat("x", 16*1024)
	start := time.Now().Add(-time.Hour)
	for i := range events {
		e := session.NewEvent(fmt.Sprintf("inv-%d", i))
		e.Author = "user"
		e.Timestamp = start.Add(time.Duration(i) * time.Millisecond)
		e.Content = genai.NewContentFromText(fmt.Sprintf("%d %s", i, text), "user")
		if err := s.AppendEvent(t.Context(), created.Session, e); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	got, err := s.Get(t.Context(), &session.GetRequest{AppName: engine, UserID: "alice", SessionID: created.Session.ID()})
	if err != nil {
		t.Fatalf("loading %d events of 40 KiB: %v", events, err)
	}
	if n := got.Session.Events().Len(); n != events {
		t.Fatalf("%d events loaded, want %d", n, events)
	}
	if last := got.Session.Events().At(events - 1).Content.Parts[0].Text; !strings.HasPrefix(last, "129 ") {
		t.Errorf("the last event is %.10q…", last)
	}

	opts := append(agentstate.ClientOptions(srv.Addr, srv.Token),
		option.WithGRPCDialOption(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4<<20))))
	client, err := aiplatform.NewSessionClient(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	parent := fmt.Sprintf("projects/p/locations/l/reasoningEngines/%s/sessions/%s", engine, created.Session.ID())
	it := client.ListEvents(t.Context(), &aiplatformpb.ListEventsRequest{Parent: parent})
	read := 0
	for {
		_, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatalf("after %d events, with gRPC-Go's 4 MB limit: %v", read, err)
		}
		read++
	}
	if read != events {
		t.Errorf("%d events listed, want %d", read, events)
	}
}

// The servers these tests start require a token: without one, or with another, a call is
// refused, so the token the other tests send over cleartext is the one that lets them in.
func TestTokensAreChecked(t *testing.T) {
	srv := testserver.Servers(t)[0]
	if srv.Token == "" {
		t.Skip("the server under test has no tokens")
	}
	for _, token := range []string{"", "not-" + srv.Token} {
		s := newService(t, &testserver.Server{Addr: srv.Addr, Token: token}, freshEngine())
		_, err := s.Create(t.Context(), &session.CreateRequest{AppName: suiteEngine, UserID: "alice"})
		if status.Code(errors.Unwrap(errors.Unwrap(err))) != codes.Unauthenticated && status.Code(err) != codes.Unauthenticated {
			t.Errorf("token %q: %v, want UNAUTHENTICATED", token, err)
		}
	}
}
