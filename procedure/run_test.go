package procedure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/demo"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// fakeSession is a Session in front of the retail world that acts like a
// proxy serving a flow: after a call of a tool in lookups, it makes the
// lookups that function names and appends them to the result.
type fakeSession struct {
	shop    *demo.Retail
	lookups map[string]func(text string) [][2]string // tool → [tool, args] to look up

	mu    sync.Mutex
	calls []string // "tool args", in the order they were sent
}

func newFake() *fakeSession {
	return &fakeSession{shop: demo.NewRetail(demo.DefaultRetailUsers), lookups: map[string]func(string) [][2]string{}}
}

func (f *fakeSession) Initialize(context.Context, time.Duration) (ServerInfo, error) {
	return ServerInfo{Name: "fake", Version: "1", ProtocolVersion: ProtocolVersion}, nil
}

func (f *fakeSession) ListTools(context.Context, time.Duration) ([]Tool, error) {
	var out []Tool
	for _, t := range f.shop.Tools() {
		m := t.(map[string]any)
		out = append(out, Tool{Name: m["name"].(string), ReadOnly: m["annotations"].(map[string]any)["readOnlyHint"].(bool)})
	}
	return out, nil
}

func (f *fakeSession) call(tool string, args json.RawMessage) CallResult {
	var m map[string]any
	json.Unmarshal(args, &m)
	r, known := f.shop.Call(context.Background(), tool, m)
	if !known {
		return CallResult{Texts: []string{"unknown tool " + tool}, IsError: true}
	}
	res := r.(map[string]any)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	return CallResult{Texts: []string{text}, IsError: res["isError"].(bool)}
}

func (f *fakeSession) CallTool(tool string, args json.RawMessage) (func(context.Context, time.Duration) (CallResult, error), error) {
	f.mu.Lock()
	f.calls = append(f.calls, tool+" "+string(args))
	f.mu.Unlock()
	res := f.call(tool, args)
	if more, ok := f.lookups[tool]; ok && !res.IsError {
		var ls []mcpmsg.Lookup
		for _, l := range more(res.Texts[0]) {
			r := f.call(l[0], json.RawMessage(l[1]))
			ls = append(ls, mcpmsg.Lookup{Tool: l[0], Args: json.RawMessage(l[1]), Text: r.Texts[0]})
		}
		if len(ls) > 0 {
			res.Texts = append(res.Texts, mcpmsg.FormatLookups(ls))
		}
	}
	return func(context.Context, time.Duration) (CallResult, error) { return res, nil }, nil
}

func mustParse(t *testing.T, src string) *Procedure {
	t.Helper()
	p, err := Parse(strings.NewReader(src), "test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const cancelOrder = `{"procedure": "cancel-order", "params": {"email": null}}
{"tool": "find_user_id_by_email", "args": {"email": "$param.email"}}
{"tool": "get_user_details", "args": {"user_id": "$last[find_user_id_by_email]"}}
{"tool": "get_order_details", "args": {"order_id": "$last[get_user_details].orders[*]"}}
{"tool": "cancel_pending_order", "args": {"order_id": "$last[get_user_details].orders[1]", "reason": "no longer needed"}}
{"tool": "get_order_details", "args": {"order_id": "$call[4].order_id"}}
`

// ordersOf looks up each order of a user, as a flow at the site
// get_user_details would.
func ordersOf(text string) [][2]string {
	var u struct {
		Orders []string `json:"orders"`
	}
	json.Unmarshal([]byte(text), &u)
	var out [][2]string
	for _, o := range u.Orders {
		b, _ := json.Marshal(map[string]string{"order_id": o})
		out = append(out, [2]string{"get_order_details", string(b)})
	}
	return out
}

func run(t *testing.T, f *fakeSession, src string, params map[string]string) *Report {
	t.Helper()
	var slept []time.Duration
	rep, err := Run(context.Background(), f, mustParse(t, src), Options{
		Params: params, Think: -1,
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(slept) != rep.LLMTurns-1 {
		t.Errorf("thought %d times for %d LLM turns", len(slept), rep.LLMTurns)
	}
	return rep
}

func TestRunWithoutLookups(t *testing.T) {
	f := newFake()
	rep := run(t, f, cancelOrder, map[string]string{"email": "c7@example.com"})
	want := []string{
		`find_user_id_by_email {"email":"c7@example.com"}`,
		`get_user_details {"user_id":"user_7"}`,
		`get_order_details {"order_id":"#W7a"}`,
		`get_order_details {"order_id":"#W7b"}`,
		`cancel_pending_order {"order_id":"#W7b","reason":"no longer needed"}`,
		`get_order_details {"order_id":"#W7b"}`,
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if rep.LLMTurns != 5 || rep.LLMTurnsSkipped != 0 || rep.Calls != 6 || rep.CallsSkipped != 0 || rep.ToolErrors != 0 {
		t.Errorf("totals: %+v", rep)
	}
	last := rep.Steps[4].Calls[0]
	if last.Index != 5 || !strings.Contains(last.Text, `"status": "cancelled"`) {
		t.Errorf("the last call: %+v", last)
	}
	if got := rep.Steps[2].Calls[1].Index; got != 3 {
		t.Errorf("the fan-out's second call has index %d, want 3", got)
	}
}

func TestRunSkipsAnsweredTurn(t *testing.T) {
	f := newFake()
	f.lookups["get_user_details"] = ordersOf
	rep := run(t, f, cancelOrder, map[string]string{"email": "c7@example.com"})
	want := []string{
		`find_user_id_by_email {"email":"c7@example.com"}`,
		`get_user_details {"user_id":"user_7"}`,
		`cancel_pending_order {"order_id":"#W7b","reason":"no longer needed"}`,
		// after the write, the lookup of #W7b is stale: read it again
		`get_order_details {"order_id":"#W7b"}`,
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if rep.LLMTurns != 4 || rep.LLMTurnsSkipped != 1 || rep.Calls != 4 || rep.CallsSkipped != 2 {
		t.Errorf("totals: %+v", rep)
	}
	st := rep.Steps[2]
	if !st.Skipped || st.LLMTurn != 0 || len(st.Calls) != 2 || !st.Calls[0].Skipped || !strings.Contains(st.Calls[1].Text, `"order_id": "#W7b"`) {
		t.Errorf("step 3: %+v", st)
	}
	if got := rep.Steps[1].Calls[0]; len(got.Lookups) != 2 || got.Lookups[1].Tool != "get_order_details" || string(got.Lookups[1].Arguments) != `{"order_id":"#W7b"}` ||
		strings.Contains(got.Text, mcpmsg.Banner) {
		t.Errorf("step 2's call: %+v", got)
	}
	if got := rep.Steps[3].LLMTurn; got != 3 {
		t.Errorf("step 4 is LLM turn %d, want 3", got)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{
		"step 3  skipped     get_order_details {\"order_id\":\"#W7a\"}  (answered by a lookup)\n",
		"4 LLM turns made, 1 skipped; 4 calls made, 2 answered by lookups\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRunSkipsPartOfATurn: a lookup answers one call of a fan-out; the
// turn is still made, with the other call only.
func TestRunSkipsPartOfATurn(t *testing.T) {
	f := newFake()
	f.lookups["get_user_details"] = func(text string) [][2]string { return ordersOf(text)[:1] }
	rep := run(t, f, cancelOrder, map[string]string{"email": "c3@example.com"})
	st := rep.Steps[2]
	if st.Skipped || st.LLMTurn != 3 || !st.Calls[0].Skipped || st.Calls[1].Skipped {
		t.Errorf("step 3: %+v", st)
	}
	if rep.LLMTurnsSkipped != 0 || rep.CallsSkipped != 1 {
		t.Errorf("totals: %+v", rep)
	}
}

// TestRunLookupsDoNotMatchOtherArguments: a lookup of another order
// answers nothing the procedure asks.
func TestRunLookupsDoNotMatchOtherArguments(t *testing.T) {
	f := newFake()
	f.lookups["get_user_details"] = func(string) [][2]string { return [][2]string{{"get_order_details", `{"order_id":"#W8a"}`}} }
	rep := run(t, f, cancelOrder, map[string]string{"email": "c7@example.com"})
	if rep.CallsSkipped != 0 || rep.LLMTurnsSkipped != 0 || rep.Calls != 6 {
		t.Errorf("totals: %+v", rep)
	}
}

func TestRunErrors(t *testing.T) {
	f := newFake()
	rep := run(t, f, cancelOrder[:strings.Index(cancelOrder, `{"tool": "get_order_details"`)], map[string]string{"email": "nobody@example.com"})
	if rep.ToolErrors != 2 || !rep.Steps[0].Calls[0].IsError || rep.Steps[0].Calls[0].Text != "Error: User not found" {
		t.Errorf("report: %+v", rep)
	}
	// A binding that names nothing stops the run at its step.
	_, err := Run(context.Background(), newFake(), mustParse(t, cancelOrder), Options{Params: map[string]string{"email": "nobody@example.com"}, Think: 0})
	var se *StepError
	if !errors.As(err, &se) || se.Line != 4 || !strings.Contains(err.Error(), "test.jsonl:4: step 3: get_order_details: argument order_id:") {
		t.Errorf("got %v", err)
	}
}

func TestRunThink(t *testing.T) {
	src := `{"procedure": "p", "think_ms": 250}
{"tool": "find_user_id_by_email", "args": {"email": "c1@example.com"}}
{"tool": "find_user_id_by_email", "args": {"email": "c2@example.com"}}
{"tool": "find_user_id_by_email", "args": {"email": "c3@example.com"}, "think_ms": 10}
`
	for _, tc := range []struct {
		name  string
		src   string
		think time.Duration
		want  []time.Duration
	}{
		{"file and step", src, -1, []time.Duration{250 * time.Millisecond, 10 * time.Millisecond}},
		{"flag", src, time.Second, []time.Duration{time.Second, time.Second}},
		{"default", strings.Replace(src, `, "think_ms": 250`, "", 1), -1, []time.Duration{DefaultThink, 10 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var slept []time.Duration
			_, err := Run(context.Background(), newFake(), mustParse(t, tc.src), Options{Think: tc.think,
				Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(slept, tc.want) {
				t.Errorf("slept %v, want %v", slept, tc.want)
			}
		})
	}
}

func FuzzParseLookups(f *testing.F) {
	f.Add(mcpmsg.FormatLookups([]mcpmsg.Lookup{{Tool: "t", Args: json.RawMessage(`{"a":1}`), Text: "x\n\ny"}}))
	f.Add(mcpmsg.Banner + "\n\nt {}:\n")
	f.Fuzz(func(t *testing.T, text string) {
		ls, ok := mcpmsg.ParseLookups(text)
		if !ok {
			return
		}
		for _, l := range ls {
			if !json.Valid(l.Args) {
				t.Errorf("arguments %q are not JSON", l.Args)
			}
		}
	})
}
