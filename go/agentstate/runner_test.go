package agentstate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/glebarez/sqlite"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"

	"github.com/agentstate/agentstate/go/internal/testserver"
)

// scripted is a model that answers from the request alone, so two runs of one conversation get
// the same answers whatever service keeps it: a user message naming someone makes it call
// `remember`; a function response makes it confirm; any other message is answered with the
// system instruction it was given (so what the instruction read from state is stored too).
type scripted struct {
	mu       sync.Mutex
	requests []string
}

func (*scripted) Name() string { return "scripted" }

func (m *scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	m.record(req)
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(m.answer(req), nil)
	}
}

func (m *scripted) record(req *model.LLMRequest) {
	shown := struct {
		Contents    []*genai.Content `json:"contents"`
		Instruction *genai.Content   `json:"instruction"`
		Tools       []string         `json:"tools"`
	}{Contents: req.Contents}
	if req.Config != nil {
		shown.Instruction = req.Config.SystemInstruction
		for _, t := range req.Config.Tools {
			for _, d := range t.FunctionDeclarations {
				shown.Tools = append(shown.Tools, d.Name)
			}
		}
	}
	b, err := json.Marshal(shown)
	if err != nil {
		panic(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, string(b))
}

var namePattern = regexp.MustCompile(`(?:my name is|I am number) (\w+)`)

func (m *scripted) answer(req *model.LLMRequest) *model.LLMResponse {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			return text("Noted.")
		}
	}
	said := ""
	for _, p := range last.Parts {
		said += p.Text
	}
	if found := namePattern.FindStringSubmatch(said); found != nil {
		return &model.LLMResponse{Content: &genai.Content{Role: "model", Parts: []*genai.Part{{
			FunctionCall: &genai.FunctionCall{Name: "remember", Args: map[string]any{"name": found[1]}},
		}}}}
	}
	instruction := ""
	if req.Config != nil && req.Config.SystemInstruction != nil {
		for _, p := range req.Config.SystemInstruction.Parts {
			instruction += p.Text
		}
	}
	return text("I was told: " + instruction)
}

func text(s string) *model.LLMResponse {
	return &model.LLMResponse{Content: genai.NewContentFromText(s, "model")}
}

type rememberArgs struct {
	Name string `json:"name"`
}

// remember writes a user: key (every session of the user), a temp: key (this invocation only) and
// a session key.
func remember(ctx tool.Context, args rememberArgs) (map[string]any, error) {
	for key, value := range map[string]any{"user:name": args.Name, "temp:heard": "name " + args.Name, "mentions": 1} {
		if err := ctx.State().Set(key, value); err != nil {
			return nil, err
		}
	}
	return map[string]any{"saved": args.Name}, nil
}

func newRunner(t *testing.T, app string, sessions session.Service, llm model.LLM) *runner.Runner {
	t.Helper()
	rememberTool, err := functiontool.New(functiontool.Config{Name: "remember", Description: "Remembers the user's name."}, remember)
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{
		Name:        "assistant",
		Model:       llm,
		Instruction: "You help {user:name?}. Mentions so far: {mentions?}.",
		Tools:       []tool.Tool{rememberTool},
		OutputKey:   "last_reply",
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: app, Agent: root, SessionService: sessions})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// conversation runs two turns in a new session of alice's on sessions; the model's requests and
// the session as stored afterwards (read back through the same service), both normalised.
func conversation(t *testing.T, app string, sessions session.Service) (requests []string, stored string) {
	t.Helper()
	llm := &scripted{}
	r := newRunner(t, app, sessions, llm)
	created, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: "alice", State: map[string]any{"topic": "trips"}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Session.ID()
	for _, said := range []string{"Hello, my name is Ann", "What do you know about me?"} {
		for _, err := range r.Run(t.Context(), "alice", id, genai.NewContentFromText(said, "user"), agent.RunConfig{}) {
			if err != nil {
				t.Fatalf("turn %q: %v", said, err)
			}
		}
	}
	got, err := sessions.Get(t.Context(), &session.GetRequest{AppName: app, UserID: "alice", SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	names := newNames()
	for _, req := range llm.requests {
		requests = append(requests, names.replace(req))
	}
	return requests, names.replace(storedView(t, got.Session))
}

// storedView is a session as its events and state, in a form two runs can be compared by: the
// fields of every event a session service keeps, times as their order only.
func storedView(t *testing.T, s session.Session) string {
	t.Helper()
	type view struct {
		Author, InvocationID, Branch string
		Content                      *genai.Content
		StateDelta                   map[string]any
		ArtifactDelta                map[string]int64
		LongRunningToolIDs           []string
		TurnComplete, Partial        bool
		Interrupted                  bool
		ErrorCode, ErrorMessage      string
		CustomMetadata               map[string]any
		GroundingMetadata            *genai.GroundingMetadata
	}
	var events []view
	var last int64
	for e := range s.Events().All() {
		if ts := e.Timestamp.UnixNano(); ts < last {
			t.Errorf("events out of time order: %v after %v", e.Timestamp, last)
		} else {
			last = ts
		}
		events = append(events, view{
			Author: e.Author, InvocationID: e.InvocationID, Branch: e.Branch, Content: e.Content,
			StateDelta: persisted(e.Actions.StateDelta), ArtifactDelta: orNil(e.Actions.ArtifactDelta),
			LongRunningToolIDs: e.LongRunningToolIDs, TurnComplete: e.TurnComplete, Partial: e.Partial,
			Interrupted: e.Interrupted, ErrorCode: e.ErrorCode, ErrorMessage: e.ErrorMessage,
			CustomMetadata: e.CustomMetadata, GroundingMetadata: e.GroundingMetadata,
		})
	}
	state := map[string]any{}
	for k, v := range s.State().All() {
		state[k] = v
	}
	b, err := json.MarshalIndent(map[string]any{"events": events, "state": state}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// persisted is a state delta as a session service keeps it: without its temp: keys (ADK for
// Go's database service and its Agent Engine client drop them before storing, as ADK for Python
// does; only its in-memory service keeps them on the stored event), and empty as nil.
func persisted(delta map[string]any) map[string]any {
	kept := map[string]any{}
	for k, v := range delta {
		if !strings.HasPrefix(k, session.KeyPrefixTemp) {
			kept[k] = v
		}
	}
	return orNil(kept)
}

// orNil is m, or nil when it is empty: services differ only in which of the two they answer.
func orNil[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// names replaces the ids a run makes up (invocation ids, function call ids) by their order of
// first appearance, so two runs compare equal when they did the same.
type names struct {
	seen map[string]string
}

func newNames() *names { return &names{seen: map[string]string{}} }

var madeUpID = regexp.MustCompile(`(?:e-|adk-)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func (n *names) replace(s string) string {
	return madeUpID.ReplaceAllStringFunc(s, func(id string) string {
		if name, ok := n.seen[id]; ok {
			return name
		}
		name := fmt.Sprintf("%s#%d", id[:strings.Index(id, "-")], len(n.seen)+1)
		n.seen[id] = name
		return name
	})
}

// ADK for Go's Runner, an LLM agent with a tool writing user: and temp: keys, output_key and an
// instruction reading {user:name}: two turns over ADK for Go's Agent Engine client on agentstate
// store what they store over ADK for Go's in-memory service (and its database service), and send
// the model the same requests.
func TestRunnerStoresWhatInMemoryStores(t *testing.T) {
	wantRequests, wantStored := conversation(t, "4242", session.InMemoryService())
	if !strings.Contains(wantStored, `"user:name": "Ann"`) || strings.Contains(wantStored, `"temp:`) {
		t.Fatalf("the in-memory run did not store what the scenario writes:\n%s", wantStored)
	}
	if len(wantRequests) != 3 || !strings.Contains(wantRequests[2], "You help Ann.") {
		t.Fatalf("the in-memory run's requests are not the scenario's:\n%s", strings.Join(wantRequests, "\n"))
	}
	// ADK for Go's own database service stores the same.
	dbRequests, dbStored := conversation(t, "4242", goDatabaseService(t, sqlite.Open(filepath.Join(t.TempDir(), "go.db"))))
	if diff := cmp.Diff(wantRequests, dbRequests); diff != "" {
		t.Fatalf("ADK for Go's database service: requests differ (-in-memory +database):\n%s", diff)
	}
	if diff := cmp.Diff(wantStored, dbStored); diff != "" {
		t.Fatalf("ADK for Go's database service: stored session differs (-in-memory +database):\n%s", diff)
	}
	for _, srv := range testserver.Servers(t) {
		t.Run(srv.Backend, func(t *testing.T) {
			requests, stored := conversation(t, freshEngine(), newService(t, srv, ""))
			if diff := cmp.Diff(wantRequests, requests); diff != "" {
				t.Errorf("the model's requests differ from the in-memory run's (-in-memory +agentstate):\n%s", diff)
			}
			if diff := cmp.Diff(wantStored, stored); diff != "" {
				t.Errorf("the stored session differs from the in-memory run's (-in-memory +agentstate):\n%s", diff)
			}
		})
	}
}

// 16 Runners at once, each in its own session of one user, each writing its own user: key: every
// key is kept (each append merges its delta on the server).
func TestConcurrentRunnersKeepEveryUserKey(t *testing.T) {
	for _, srv := range testserver.Servers(t) {
		t.Run(srv.Backend, func(t *testing.T) {
			engine := freshEngine()
			sessions := newService(t, srv, "")
			const writers = 16
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- markOnce(t, engine, sessions, i)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			fresh, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: engine, UserID: "bob"})
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for k := range fresh.Session.State().All() {
				if strings.HasPrefix(k, "user:mark") {
					kept = append(kept, k)
				}
			}
			sort.Strings(kept)
			if len(kept) != writers {
				t.Errorf("%d of %d user: keys kept: %v", len(kept), writers, kept)
			}
		})
	}
}

type markArgs struct {
	Index int `json:"index"`
}

// markOnce runs one turn in a new session of bob's whose tool writes user:markN.
func markOnce(t *testing.T, engine string, sessions session.Service, i int) error {
	mark, err := functiontool.New(functiontool.Config{Name: "mark", Description: "Marks a number."},
		func(ctx tool.Context, args markArgs) (map[string]any, error) {
			return map[string]any{"ok": true}, ctx.State().Set(fmt.Sprintf("user:mark%02d", args.Index), args.Index)
		})
	if err != nil {
		return err
	}
	llm := markModel{index: i}
	root, err := llmagent.New(llmagent.Config{Name: "marker", Model: llm, Tools: []tool.Tool{mark}})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{AppName: engine, Agent: root, SessionService: sessions})
	if err != nil {
		return err
	}
	created, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: engine, UserID: "bob"})
	if err != nil {
		return err
	}
	for _, err := range r.Run(t.Context(), "bob", created.Session.ID(), genai.NewContentFromText("mark", "user"), agent.RunConfig{}) {
		if err != nil {
			return fmt.Errorf("runner %d: %w", i, err)
		}
	}
	return nil
}

// markModel calls `mark` with its index, then says it is done.
type markModel struct{ index int }

func (markModel) Name() string { return "marker" }

func (m markModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for _, p := range req.Contents[len(req.Contents)-1].Parts {
			if p.FunctionResponse != nil {
				yield(text("done"), nil)
				return
			}
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: "model", Parts: []*genai.Part{{
			FunctionCall: &genai.FunctionCall{Name: "mark", Args: map[string]any{"index": m.index}},
		}}}}, nil)
	}
}
