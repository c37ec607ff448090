package procedure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/demo"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

const (
	retailLog  = "20250801T161636.780Z-42820" // gpt-4.1: parallel reads, a write and an error in one turn
	airlineLog = "20251202T140514.130Z-39914" // gpt-4o: the assistant says something with its calls
)

func sampleLog(t *testing.T, domain, agent, session string) *episode.Episode {
	t.Helper()
	ep, err := episode.ReadLog(filepath.Join("..", "testdata", "tau2", "logs", domain, agent, session+".jsonl"), episode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func tau2DB(t *testing.T) *demo.Tau2DB {
	t.Helper()
	db, err := demo.LoadTau2DB(filepath.Join("..", "testdata", "tau2", "db", "retail.json"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// serve starts the world as an MCP server on pipes and returns a client of
// it: the protocol for real, without a process.
func serve(t *testing.T, w demo.World) *Client {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	s := &demo.Server{Version: "test", World: w}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(context.Background(), toServer, fromServer)
		fromServer.Close()
	}()
	c := newClient(fromClient, toClient)
	t.Cleanup(func() {
		c.Close(time.Second)
		<-done
	})
	return c
}

func TestNewRecording(t *testing.T) {
	rec := NewRecording("r", sampleLog(t, "retail", "gpt-4.1", retailLog))
	if rec.Episode != retailLog || rec.TaskID != "27" || rec.Domain != "retail" {
		t.Errorf("recording of %s, task %s, domain %s", rec.Episode, rec.TaskID, rec.Domain)
	}
	var kinds []string
	for _, st := range rec.Steps {
		switch {
		case st.Message != nil:
			kinds = append(kinds, st.Message.Role)
		default:
			kinds = append(kinds, fmt.Sprintf("turn of %d", len(st.Turn.Calls)))
			if st.EndMS < st.StartMS {
				t.Errorf("turn %d ends at %d, before it starts at %d", st.Turn.Index, st.EndMS, st.StartMS)
			}
			for _, c := range st.Turn.Calls {
				if !c.Answered {
					t.Errorf("turn %d: %s has no recorded answer", st.Turn.Index, c.Tool)
				}
			}
		}
	}
	want := []string{"assistant", "user", "assistant", "user", "turn of 1", "turn of 1", "assistant", "user", "turn of 4",
		"assistant", "user", "turn of 1", "assistant", "user", "turn of 2", "assistant", "user", "turn of 1", "turn of 1", "assistant", "user"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	// Seven replies and seven turns of calls: fourteen model responses.
	if rec.LLMTurns != 14 || rec.ToolTurns != 7 {
		t.Errorf("%d LLM turns, %d with calls; want 14 and 7", rec.LLMTurns, rec.ToolTurns)
	}

	// What the assistant said just before its calls is the same response.
	rec = NewRecording("a", sampleLog(t, "airline", "gpt-4o-2024-11-20", airlineLog))
	said := 0
	for _, st := range rec.Steps {
		if st.Turn != nil && st.Turn.Said != nil {
			said++
			if st.Turn.Said.Role != "assistant" {
				t.Errorf("turn %d said as %s", st.Turn.Index, st.Turn.Said.Role)
			}
		}
	}
	// Sixteen responses, as τ²-bench's results file has sixteen assistant
	// messages: five said something with their calls, one called silently.
	if said != 5 || rec.ToolTurns != 6 || rec.LLMTurns != 16 {
		t.Errorf("%d turns with what was said, %d turns, %d LLM turns; want 5, 6 and 16", said, rec.ToolTurns, rec.LLMTurns)
	}
}

// TestReplayReproduces replays the recorded agent against τ²-bench's world
// with no flow: every call is made, every read comes back as recorded, the
// conversation is written in order, and the waits are the recorded ones,
// scaled.
func TestReplayReproduces(t *testing.T) {
	ep := sampleLog(t, "retail", "gpt-4.1", retailLog)
	rec := NewRecording("sample", ep)
	var conv bytes.Buffer
	var waits []time.Duration
	rep, err := Replay(context.Background(), serve(t, demo.NewTau2Retail(tau2DB(t))), rec, ReplayOptions{
		Context: &conv, TimeScale: 0.5,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.TurnsMade != 7 || rep.TurnsSkipped != 0 || rep.CallsMade != 11 || rep.CallsSkipped != 0 || rep.ToolErrors != 2 {
		t.Errorf("turns %d made, %d skipped; calls %d made, %d skipped; %d errors", rep.TurnsMade, rep.TurnsSkipped, rep.CallsMade, rep.CallsSkipped, rep.ToolErrors)
	}
	if rep.ResultsCompared != 7 || rep.ResultsMatched != 7 {
		t.Errorf("%d of %d reads as recorded, want 7 of 7", rep.ResultsMatched, rep.ResultsCompared)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(conv.String()), "\n") {
		role, text, ok := mcpmsg.ReadChat([]byte(l))
		if !ok {
			t.Fatalf("context line %s", l)
		}
		lines = append(lines, role+": "+text)
	}
	var want []string
	for _, ev := range ep.Events {
		if ev.Message != nil {
			want = append(want, ev.Message.Role+": "+ev.Message.Text)
		}
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("conversation (-recorded +written):\n%s", diff)
	}
	// A wait before every step but the first, of half its recorded gap.
	var total, wantTotal time.Duration
	for _, d := range waits {
		total += d
	}
	last := rec.Steps[0].EndMS
	for _, st := range rec.Steps[1:] {
		wantTotal += time.Duration(float64(st.StartMS-last) * 0.5 * float64(time.Millisecond))
		last = max(last, st.EndMS)
	}
	if len(waits) != len(rec.Steps)-1 || total != wantTotal {
		t.Errorf("%d waits of %v in all, want %d of %v", len(waits), total, len(rec.Steps)-1, wantTotal)
	}
}

// lookupSession is a Session in front of a world that acts as a proxy
// serving a flow: after a call of a tool in after, it makes the calls
// after names with the world and appends them to the result.
type lookupSession struct {
	*Client
	world demo.World
	after map[string][][2]string // tool → [tool, args] to look up

	mu   sync.Mutex
	sent []string
}

func (s *lookupSession) CallTool(tool string, args json.RawMessage) (func(context.Context, time.Duration) (CallResult, error), error) {
	s.mu.Lock()
	s.sent = append(s.sent, tool)
	s.mu.Unlock()
	wait, err := s.Client.CallTool(tool, args)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d time.Duration) (CallResult, error) {
		res, err := wait(ctx, d)
		if err != nil || len(s.after[tool]) == 0 {
			return res, err
		}
		var found []mcpmsg.Lookup
		for _, l := range s.after[tool] {
			var m map[string]any
			json.Unmarshal([]byte(l[1]), &m)
			r, _ := s.world.Call(ctx, l[0], m)
			text := r.(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
			found = append(found, mcpmsg.Lookup{Tool: l[0], Args: json.RawMessage(l[1]), Text: text})
		}
		res.Texts = append(res.Texts, mcpmsg.FormatLookups(found))
		return res, nil
	}, nil
}

// CallTools sends the calls one by one, through CallTool.
func (s *lookupSession) CallTools(calls []ToolCall) ([]func(context.Context, time.Duration) (CallResult, error), error) {
	var waits []func(context.Context, time.Duration) (CallResult, error)
	for _, c := range calls {
		w, err := s.CallTool(c.Tool, c.Args)
		if err != nil {
			return nil, err
		}
		waits = append(waits, w)
	}
	return waits, nil
}

func TestReplaySkips(t *testing.T) {
	db := tau2DB(t)
	rec := NewRecording("sample", sampleLog(t, "retail", "gpt-4.1", retailLog))
	for _, tc := range []struct {
		name                             string
		after                            map[string][][2]string
		skipped                          []int    // the turns skipped
		sent                             []string // the calls made, in order
		lookups, used, compared, matched int
	}{
		{"a lookup answers the next turn", map[string][][2]string{
			"find_user_id_by_name_zip": {{"get_user_details", `{"user_id":"isabella_johansson_2152"}`}},
		}, []int{1}, []string{"find_user_id_by_name_zip", "get_order_details", "get_order_details", "get_order_details", "get_order_details",
			"get_product_details", "exchange_delivered_order_items", "return_delivered_order_items", "return_delivered_order_items", "transfer_to_human_agents"},
			1, 1, 7, 7},
		{"a lookup answers part of a turn", map[string][][2]string{
			"get_user_details": {{"get_order_details", `{"order_id":"#W7181492"}`}, {"get_order_details", `{"order_id":"#W0000000"}`}},
		}, nil, []string{"find_user_id_by_name_zip", "get_user_details", "get_order_details", "get_order_details", "get_order_details",
			"get_product_details", "exchange_delivered_order_items", "return_delivered_order_items", "return_delivered_order_items", "transfer_to_human_agents"},
			2, 1, 7, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := demo.NewTau2Retail(db)
			s := &lookupSession{Client: serve(t, w), world: w.NewSession(), after: tc.after}
			rep, err := Replay(context.Background(), s, rec, ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var skipped []int
			for _, tr := range rep.Turns {
				if tr.Skipped {
					skipped = append(skipped, tr.Turn)
				}
			}
			if !cmp.Equal(skipped, tc.skipped) || rep.TurnsSkipped != len(tc.skipped) || rep.TurnsMade != 7-len(tc.skipped) {
				t.Errorf("turns skipped %v (%d; %d made), want %v", skipped, rep.TurnsSkipped, rep.TurnsMade, tc.skipped)
			}
			if diff := cmp.Diff(tc.sent, s.sent); diff != "" {
				t.Errorf("calls made (-want +got):\n%s", diff)
			}
			if rep.CallsMade+rep.CallsSkipped != 11 || rep.CallsMade != len(tc.sent) {
				t.Errorf("calls %d made, %d skipped", rep.CallsMade, rep.CallsSkipped)
			}
			if rep.Lookups != tc.lookups || rep.LookupsUsed != tc.used || rep.ResultsCompared != tc.compared || rep.ResultsMatched != tc.matched {
				t.Errorf("lookups %d (%d used), reads %d of %d; want %d (%d), %d of %d", rep.Lookups, rep.LookupsUsed,
					rep.ResultsMatched, rep.ResultsCompared, tc.lookups, tc.used, tc.matched, tc.compared)
			}
		})
	}
}

// TestReplaySkippedTurnSaysNothing: a turn skipped takes what the assistant
// said with it, and its think time.
func TestReplaySkippedTurnSaysNothing(t *testing.T) {
	rec := &Recording{Steps: []RecordedStep{
		{Message: &RecordedMessage{Role: "user", Text: "my id is isabella_johansson_2152"}, StartMS: 0, EndMS: 0},
		{Turn: &RecordedTurn{Index: 0, Said: &RecordedMessage{Role: "assistant", Text: "looking you up"}, Calls: []RecordedCall{
			{Tool: "find_user_id_by_name_zip", Args: json.RawMessage(`{"first_name":"Isabella","last_name":"Johansson","zip":"32286"}`)}}}, StartMS: 1000, EndMS: 1010},
		{Turn: &RecordedTurn{Index: 1, Said: &RecordedMessage{Role: "assistant", Text: "reading your details"}, Calls: []RecordedCall{
			{Tool: "get_user_details", Args: json.RawMessage(`{"user_id":"isabella_johansson_2152"}`)}}}, StartMS: 3000, EndMS: 3010},
		{Message: &RecordedMessage{Role: "assistant", Text: "done"}, StartMS: 5000, EndMS: 5000},
	}}
	w := demo.NewTau2Retail(tau2DB(t))
	s := &lookupSession{Client: serve(t, w), world: w.NewSession(), after: map[string][][2]string{
		"find_user_id_by_name_zip": {{"get_user_details", `{"user_id": "isabella_johansson_2152"}`}},
	}}
	var conv bytes.Buffer
	var waits []time.Duration
	rep, err := Replay(context.Background(), s, rec, ReplayOptions{Context: &conv, TimeScale: 1,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.TurnsSkipped != 1 || rep.TurnsMade != 1 {
		t.Errorf("%d turns skipped, %d made", rep.TurnsSkipped, rep.TurnsMade)
	}
	want := `{"role": "user", "content": "my id is isabella_johansson_2152"}
{"role": "assistant", "content": "looking you up"}
{"role": "assistant", "content": "done"}
`
	if diff := cmp.Diff(want, conv.String()); diff != "" {
		t.Errorf("conversation (-want +got):\n%s", diff)
	}
	// 1 s before the first turn, none for the skipped one, and the 1.99 s
	// between its recorded end and the last message.
	if diff := cmp.Diff([]time.Duration{time.Second, 1990 * time.Millisecond}, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

// TestReplayWrites: a write forgets what was looked up before it, from its
// place in its turn on; a tool with no readOnlyHint (a calculator) is no
// write.
func TestReplayWrites(t *testing.T) {
	call := func(tool, args string) RecordedCall { return RecordedCall{Tool: tool, Args: json.RawMessage(args)} }
	user := `{"user_id": "isabella_johansson_2152"}`
	find := call("find_user_id_by_name_zip", `{"first_name": "Isabella", "last_name": "Johansson", "zip": "32286"}`)
	move := call("modify_user_address", `{"user_id": "isabella_johansson_2152", "address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}`)
	read := call("get_user_details", user)
	calc := call("calculate", `{"expression": "1 + 1"}`)
	turns := func(calls ...[]RecordedCall) *Recording {
		rec := &Recording{}
		for i, c := range calls {
			rec.Steps = append(rec.Steps, RecordedStep{Turn: &RecordedTurn{Index: i, Calls: c}})
		}
		return rec
	}
	for _, tc := range []struct {
		name    string
		rec     *Recording
		skipped int
		made    []string
	}{
		{"a write between", turns([]RecordedCall{find}, []RecordedCall{move}, []RecordedCall{read}), 0,
			[]string{"find_user_id_by_name_zip", "modify_user_address", "get_user_details"}},
		{"a write earlier in the turn", turns([]RecordedCall{find}, []RecordedCall{move, read}), 0,
			[]string{"find_user_id_by_name_zip", "modify_user_address", "get_user_details"}},
		{"a write later in the turn", turns([]RecordedCall{find}, []RecordedCall{read, move}), 0,
			[]string{"find_user_id_by_name_zip", "modify_user_address"}},
		{"a calculator between", turns([]RecordedCall{find}, []RecordedCall{calc}, []RecordedCall{read}), 1,
			[]string{"find_user_id_by_name_zip", "calculate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := demo.NewTau2Retail(tau2DB(t))
			s := &lookupSession{Client: serve(t, w), world: w.NewSession(), after: map[string][][2]string{
				"find_user_id_by_name_zip": {{"get_user_details", user}},
			}}
			rep, err := Replay(context.Background(), s, tc.rec, ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.made, s.sent); diff != "" || rep.TurnsSkipped != tc.skipped {
				t.Errorf("%d turns skipped, want %d; calls made (-want +got):\n%s", rep.TurnsSkipped, tc.skipped, diff)
			}
		})
	}
}

// writes records each Write to the server's stdin.
type writes struct {
	mu sync.Mutex
	w  [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w = append(w.w, bytes.Clone(p))
	return len(p), nil
}

func (w *writes) Close() error { return nil }

// TestCallToolsOneWrite: a turn's calls reach the server in one write, so a
// proxy in front of it reads them all before it sees the first answer.
func TestCallToolsOneWrite(t *testing.T) {
	in := &writes{}
	out, toClient := io.Pipe()
	c := newClient(in, out)
	defer func() {
		toClient.Close()
		c.Close(time.Second)
	}()
	waits, err := c.CallTools([]ToolCall{
		{Tool: "get_order_details", Args: json.RawMessage(`{"order_id":"#W1"}`)},
		{Tool: "get_order_details", Args: json.RawMessage(`{"order_id":"#W2"}`)},
		{Tool: "get_user_details", Args: json.RawMessage(`{"user_id":"u"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	in.mu.Lock()
	got := in.w
	in.mu.Unlock()
	if len(got) != 1 || bytes.Count(got[0], []byte("\n")) != 3 {
		t.Fatalf("%d writes: %q", len(got), got)
	}
	// Answered out of order, each wait gets its own answer.
	go io.WriteString(toClient, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"c"}]}}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"b"}],"isError":true}}`+"\n")
	for i, want := range []string{"a", "b", "c"} {
		res, err := waits[i](context.Background(), 10*time.Second)
		if err != nil || len(res.Texts) != 1 || res.Texts[0] != want || res.IsError != (want == "b") {
			t.Errorf("call %d: %+v %v, want %s", i, res, err, want)
		}
	}
}
