package agentstate_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"google.golang.org/adk/session"
	"google.golang.org/adk/session/database"

	"github.com/agentstate/agentstate/go/internal/testserver"
)

// goDatabaseService is ADK for Go's database session service on dialector, its tables made.
func goDatabaseService(t *testing.T, dialector gorm.Dialector) session.Service {
	t.Helper()
	s, err := database.NewSessionService(dialector, &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("database.NewSessionService: %v", err)
	}
	if err := database.AutoMigrate(s); err != nil {
		t.Fatalf("database.AutoMigrate: %v", err)
	}
	return s
}

// copySessions copies every session of app, with its events, from ADK for Go's database service
// to another session service (ADK for Go's Agent Engine client on agentstate): the way to bring a
// database of ADK for Go's to agentstate, whose schema it does not share. The README shows it.
func copySessions(ctx context.Context, from, to session.Service, app string) (int, error) {
	listed, err := from.List(ctx, &session.ListRequest{AppName: app})
	if err != nil {
		return 0, err
	}
	for _, s := range listed.Sessions {
		got, err := from.Get(ctx, &session.GetRequest{AppName: app, UserID: s.UserID(), SessionID: s.ID()})
		if err != nil {
			return 0, err
		}
		state := map[string]any{}
		for k, v := range got.Session.State().All() {
			state[k] = v
		}
		created, err := to.Create(ctx, &session.CreateRequest{AppName: app, UserID: s.UserID(), SessionID: s.ID(), State: state})
		if err != nil {
			return 0, err
		}
		for e := range got.Session.Events().All() {
			if err := to.AppendEvent(ctx, created.Session, e); err != nil {
				return 0, err
			}
		}
	}
	return len(listed.Sessions), nil
}

// seed writes what a conversation of ADK for Go's leaves in a store: two users' sessions, a
// session key, a user: key, an app: key, a function call and its response.
func seed(t *testing.T, s session.Service, app string) {
	t.Helper()
	start := time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)
	for u, user := range []string{"alice", "bob"} {
		created, err := s.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: user, State: map[string]any{"topic": "trips"}})
		if err != nil {
			t.Fatal(err)
		}
		call := &genai.FunctionCall{ID: "call-1", Name: "book", Args: map[string]any{"city": "Lisbon"}}
		reply := &genai.FunctionResponse{ID: "call-1", Name: "book", Response: map[string]any{"ok": true}}
		contents := []*genai.Content{
			genai.NewContentFromText("Book Lisbon", "user"),
			{Role: "model", Parts: []*genai.Part{{FunctionCall: call}}},
			{Role: "user", Parts: []*genai.Part{{FunctionResponse: reply}}},
			genai.NewContentFromText("Booked.", "model"),
		}
		deltas := []map[string]any{nil, nil, {"user:city": "Lisbon", "app:bookings": u + 1, "booked": true}, {"last": "Booked."}}
		for i, content := range contents {
			e := session.NewEvent("inv-1")
			e.Author = map[bool]string{true: "user", false: "agent"}[i == 0]
			e.Timestamp = start.Add(time.Duration(u*10+i) * time.Second)
			e.Content = content
			e.Actions.StateDelta = deltas[i]
			if err := s.AppendEvent(t.Context(), created.Session, e); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ADK for Go's database service and agentstate on one database. Their schemas differ: ADK for
// Go's events table has a column per field with the actions as Go's JSON (ADK for Python's old
// v0 layout), agentstate's is ADK for Python's v1 (the event as `event_data`), and both name their
// tables `sessions`, `events`, `app_states` and `user_states`. So agentstate refuses such a
// database, naming what it is and what to do, and its sessions move with ADK for Go's own two
// services, arriving with every event, time and state.
func TestADKGoDatabaseIsRefusedAndItsSessionsCopy(t *testing.T) {
	if testserver.External() {
		t.Skip("starts servers of its own")
	}
	databases := []struct {
		name      string
		url       string
		dialector func(url string) gorm.Dialector
	}{
		{"sqlite", filepath.Join(t.TempDir(), "adk-go.db"), func(path string) gorm.Dialector { return sqlite.Open(path) }},
		{"postgres", testserver.Postgres(t), func(url string) gorm.Dialector { return postgres.Open(url) }},
	}
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			from := goDatabaseService(t, db.dialector(db.url))
			seed(t, from, "trips")

			url := db.url
			if db.name == "sqlite" {
				url = "sqlite://" + db.url
			}
			out, err := exec.Command(testserver.Binary(t), "migrate", "--db", url).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "ADK for Go's database service") {
				t.Fatalf("agentstate migrate on ADK for Go's database: %v\n%s", err, out)
			}

			var backend string
			if db.name == "sqlite" {
				backend = testserver.SQLite(t)
			} else {
				backend = testserver.Postgres(t)
			}
			srv := testserver.Start(t, db.name, backend)
			engine := freshEngine()
			to := newService(t, srv, engine)
			n, err := copySessions(t.Context(), from, to, "trips")
			if err != nil || n != 2 {
				t.Fatalf("copied %d sessions: %v", n, err)
			}
			for _, user := range []string{"alice", "bob"} {
				listed, err := from.List(t.Context(), &session.ListRequest{AppName: "trips", UserID: user})
				if err != nil || len(listed.Sessions) != 1 {
					t.Fatalf("%s's sessions: %v", user, err)
				}
				req := &session.GetRequest{AppName: "trips", UserID: user, SessionID: listed.Sessions[0].ID()}
				want, err := from.Get(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := to.Get(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(storedView(t, want.Session), storedView(t, got.Session)); diff != "" {
					t.Errorf("%s's session differs once copied (-ADK for Go's database +agentstate):\n%s", user, diff)
				}
				if diff := cmp.Diff(times(want.Session), times(got.Session)); diff != "" {
					t.Errorf("%s's event times differ once copied:\n%s", user, diff)
				}
			}
		})
	}
}

func times(s session.Session) []string {
	var out []string
	for e := range s.Events().All() {
		out = append(out, e.Timestamp.UTC().Format(time.RFC3339Nano))
	}
	return out
}
