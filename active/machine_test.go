package active

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/judge"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/oracle"
)

// The Machine's tests are sequences of events, as the transports and the
// slow steps would send them, with no process, file or network: each
// checks the actions that come out, in order, and the verdicts.

// driver runs one Machine as the proxy's owner does, and plays the
// transports: host lines are screened and handed over; server lines are
// marked as the proxy's or the host's by the shared ids.
type driver struct {
	t    *testing.T
	m    *Machine
	ids  *jsonrpc.IDs
	acts []Action // every action so far
}

func newDriver(t *testing.T, c Config) *driver {
	t.Helper()
	c.IDs = jsonrpc.NewIDs()
	clock := time.Unix(0, 0)
	c.Now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, m: m, ids: c.IDs}
	d.acts = append(d.acts, m.Start()...)
	return d
}

// handle hands the Machine ev and returns its verdict and actions.
func (d *driver) handle(ev Event) (bool, []Action) {
	taken, acts := d.m.Handle(ev)
	d.acts = append(d.acts, acts...)
	return taken, acts
}

// host hands a host line over as the transport does (hostLine): screened,
// its id noted, and learnt from or held. It returns the verdict and the
// actions; a line the screen answers returns that answer as a ToHost.
func (d *driver) host(line string, heard ...string) (bool, []Action) {
	d.t.Helper()
	v := mcpmsg.ReadView([]byte(line))
	sc := d.m.Screen(v)
	switch {
	case sc.Answer != nil:
		return true, []Action{ToHost{Line: append(sc.Answer, '\n'), Own: true}}
	case sc.Drop:
		return true, nil
	}
	if v.Kind == jsonrpc.Request {
		// The transport waits here while a request of the proxy's has the
		// same id in flight; the tests never send one then.
		gone := make(chan struct{})
		close(gone)
		if !d.ids.Host(v.ID, gone) {
			d.t.Fatalf("host id %s sent while the proxy's request of that id is in flight", v.ID)
		}
	}
	if !sc.Learn {
		return false, nil
	}
	if !sc.Held {
		return d.handle(sc.Req)
	}
	h := &Held{Req: sc.Req, Line: []byte(line)}
	for _, l := range heard {
		h.Heard = append(h.Heard, []byte(l))
	}
	return d.handle(h)
}

// server hands a server response over as fromServer does.
func (d *driver) server(line string) (bool, []Action) {
	m := jsonrpc.Classify([]byte(line))
	own := d.ids.Answered(m.ID)
	return d.handle(Response{Msg: m, Line: []byte(line + "\n"), Own: own})
}

func call(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func result(id, text string, isError bool) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + strconv.Quote(text) + `}],"isError":` + strconv.FormatBool(isError) + `}}`
}

// only returns the actions of type T among acts.
func only[T Action](acts []Action) []T {
	var out []T
	for _, a := range acts {
		if x, ok := a.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func one[T Action](t *testing.T, acts []Action) T {
	t.Helper()
	xs := only[T](acts)
	if len(xs) != 1 {
		var zero T
		t.Fatalf("want one %T among the actions, got %d: %s", zero, len(xs), describe(acts))
	}
	return xs[0]
}

func describe(acts []Action) string {
	var b strings.Builder
	for _, a := range acts {
		switch x := a.(type) {
		case ToHost:
			fmt.Fprintf(&b, "\n  ToHost own=%v %s", x.Own, strings.TrimSpace(string(x.Line)))
		case ToServer:
			fmt.Fprintf(&b, "\n  ToServer own=%v %s", x.Own, strings.TrimSpace(string(x.Line)))
		case Log:
			fmt.Fprintf(&b, "\n  Log %d %.120s", x.To, x.Line)
		default:
			fmt.Fprintf(&b, "\n  %T %+v", a, a)
		}
	}
	return b.String()
}

func idOf(line []byte) string { return string(jsonrpc.Classify(jsonrpc.TrimLine(line)).ID) }

// flowDriver serves the demo flow: after each call of lookup, the flow
// looks up the text its result names as next.
func flowDriver(t *testing.T, shadow bool) *driver {
	t.Helper()
	f, err := flow.Load("testdata/demo.flow.json")
	if err != nil {
		t.Fatal(err)
	}
	return newDriver(t, Config{Server: "hoist-mcp-demo", Session: "s", FlowLog: true, Flow: &FlowConfig{
		Flow: f, Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold},
		Caps: flow.Caps{PerCall: 1, PerSession: 100}, Shadow: shadow, LookupTimeout: time.Second,
	}})
}

// runToLookup sends the agent's call id and the server's answer, and goes
// through the run's first step: the lookup it makes is returned.
func (d *driver) runToLookup(id string) ToServer {
	d.t.Helper()
	d.host(call(id, "lookup", `{"text":"a"}`))
	taken, acts := d.server(result(id, `{"next":"b"}`, false))
	if !taken {
		d.t.Fatalf("the agent's answer was not held for the run: %s", describe(acts))
	}
	st := one[Step](d.t, acts)
	_, acts = d.handle(Stepped{Step: st.ID})
	one[Timer](d.t, acts)
	return one[ToServer](d.t, acts)
}

func TestLookupThenHandBack(t *testing.T) {
	d := flowDriver(t, false)
	req := d.runToLookup("7")
	if !req.Own || idOf(req.Line) != `"hoist-1"` || !strings.Contains(string(req.Line), `"text":"b"`) {
		t.Fatalf("lookup %s: want the proxy's hoist-1 for text b", req.Line)
	}
	taken, acts := d.server(result(`"hoist-1"`, "found b", false))
	if !taken {
		t.Fatal("the lookup's answer was not taken: it must never reach the host")
	}
	one[StopTimer](t, acts)
	st := one[Step](t, acts)
	_, acts = d.handle(Stepped{Step: st.ID})
	h := one[ToHost](t, acts)
	if idOf(h.Line) != "7" || !h.Own || !strings.Contains(string(h.Line), "found b") {
		t.Fatalf("handed back %s: want the agent's answer to 7 with the lookup appended", h.Line)
	}
	if logs := only[Log](d.acts); len(logs) < 2 {
		t.Errorf("the flow log got %d lines: want the decisions and the run's record", len(logs))
	}
}

// TestHostIDEqualsProxyID: a host request whose id is the one the proxy
// would give its next lookup is in flight first; the lookup takes another
// id, and each answer goes where it belongs (issue 23, point 3).
func TestHostIDEqualsProxyID(t *testing.T) {
	d := flowDriver(t, false)
	d.host(`{"jsonrpc":"2.0","id":"hoist-1","method":"ping"}`)
	req := d.runToLookup("7")
	if idOf(req.Line) == `"hoist-1"` {
		t.Fatalf("the lookup took the id of the host's request in flight: %s", req.Line)
	}
	taken, acts := d.server(`{"jsonrpc":"2.0","id":"hoist-1","result":{}}`)
	if taken || len(only[ToHost](acts)) != 0 {
		t.Fatalf("the host's answer to hoist-1 was taken by the proxy: %s", describe(acts))
	}
	taken, _ = d.server(result(idOf(req.Line), "found b", false))
	if !taken {
		t.Fatal("the lookup's answer reached the host")
	}
}

// TestHostIDAfterProxyID: the proxy's lookup hoist-1 is in flight when the
// host sends a request of the same id. The transport holds the host's
// request until the proxy's is answered (jsonrpc.IDs.Host); then the
// proxy's answer is its own, and the host's, after, is the host's.
func TestHostIDAfterProxyID(t *testing.T) {
	d := flowDriver(t, false)
	req := d.runToLookup("7")
	if idOf(req.Line) != `"hoist-1"` {
		t.Fatalf("lookup %s", req.Line)
	}
	if d.ids.Free([]byte(`"hoist-1"`)) {
		t.Fatal("the proxy's id is free while its lookup is in flight: the host's request would be forwarded beside it")
	}
	taken, _ := d.server(result(`"hoist-1"`, "found b", false))
	if !taken {
		t.Fatal("the lookup's answer was not the proxy's")
	}
	d.host(`{"jsonrpc":"2.0","id":"hoist-1","method":"ping"}`)
	taken, acts := d.server(`{"jsonrpc":"2.0","id":"hoist-1","result":{}}`)
	if taken || len(only[ToHost](acts)) != 0 {
		t.Fatalf("the host's answer was taken for the proxy's: %s", describe(acts))
	}
}

// TestLookupTimeoutThenLateAnswer: the wait for a lookup ends, the run
// hands the agent's answer back as it was, and the answer that comes late
// is dropped, never taken for a later lookup's.
func TestLookupTimeoutThenLateAnswer(t *testing.T) {
	d := flowDriver(t, false)
	req := d.runToLookup("7")
	_, acts := d.handle(Timeout{ID: idOf(req.Line)})
	h := one[ToHost](t, acts)
	if h.Own || idOf(h.Line) != "7" {
		t.Fatalf("after the timeout: %s", describe(acts))
	}
	taken, acts := d.server(result(idOf(req.Line), "late", false))
	if !taken || len(acts) != 0 {
		t.Fatalf("the late answer: taken %v, %s", taken, describe(acts))
	}
	// A stale timeout (a wait already over) does nothing either.
	if _, acts := d.handle(Timeout{ID: idOf(req.Line)}); len(acts) != 0 {
		t.Fatalf("a stale timeout acted: %s", describe(acts))
	}
}

// TestServerAnswerWhileRunHolds: while a run holds one of the agent's
// answers, another call's answer goes on at once.
func TestServerAnswerWhileRunHolds(t *testing.T) {
	d := flowDriver(t, false)
	d.host(call("8", "update", `{"x":1}`))
	d.runToLookup("7")
	taken, acts := d.server(result("8", "updated", false))
	if taken || len(acts) != 0 {
		t.Fatalf("an answer the run does not hold waited: taken %v %s", taken, describe(acts))
	}
}

// TestCloseHandsBack: the host closes while a run waits for its step,
// and then the session closes while another waits for its lookup: each
// held answer is handed back, its step cancelled, and no lookup starts.
func TestCloseHandsBack(t *testing.T) {
	for _, ev := range []Event{HostClosed{}, Closing{}, ServerClosed{}} {
		t.Run(fmt.Sprintf("%T", ev), func(t *testing.T) {
			d := flowDriver(t, false)
			d.host(call("7", "lookup", `{"text":"a"}`))
			_, acts := d.server(result("7", `{"next":"b"}`, false))
			st := one[Step](t, acts)
			_, acts = d.handle(ev)
			if c := one[CancelStep](t, acts); c.ID != st.ID {
				t.Errorf("cancelled step %d, want %d", c.ID, st.ID)
			}
			if h := one[ToHost](t, acts); idOf(h.Line) != "7" {
				t.Errorf("handed back %s", h.Line)
			}
			// The step's result, come late, starts nothing.
			if _, acts := d.handle(Stepped{Step: st.ID}); len(acts) != 0 {
				t.Fatalf("a step after close acted: %s", describe(acts))
			}
			// Nor does an answer after the host has gone.
			d.host(call("9", "lookup", `{"text":"c"}`))
			taken, acts := d.server(result("9", `{"next":"d"}`, false))
			if _, isHost := ev.(HostClosed); isHost && (taken || len(only[Step](acts)) > 0) {
				t.Fatalf("a run started after the host closed: %s", describe(acts))
			}
		})
	}
}

// judgeDriver runs the retail guards with the confirmation judge
// enforced, and a conversation in which the customer said yes.
func judgeDriver(t *testing.T) *driver {
	return newDriver(t, Config{Server: "retail", Session: "s", GuardsLog: true, ConfirmLog: true,
		Guards: &GuardsConfig{Domain: guards.Retail, Judge: &JudgeConfig{Enforce: true, Policy: testPolicy}}})
}

// testPolicy is the judge's policy in these tests.
const testPolicy = "confirm-judge confirm/1 threshold 0.5"

// approved is v with the approval the judge gives j's call under
// testPolicy, now.
func (d *driver) approved(j *Judging, v judge.Verdict) judge.Verdict {
	v.Approval = judge.Approve(judge.MethodToolsCall, j.Call.Name, j.Call.Args, testPolicy, d.m.now(), 0)
	return v
}

var yes = []string{`{"role":"assistant","content":"Cancel #W1a because it is no longer needed?"}`, `{"role":"user","content":"Yes, please."}`}

const cancelArgs = `{"order_id":"#W1a","reason":"no longer needed"}`

func verdict(pYes float64, fails bool) judge.Verdict {
	return judge.Verdict{First: oracle.Answer{Answered: true, PYes: pYes}, Fails: fails}
}

// TestJudgeHoldsOnlyItsWrite: a write the judge must see is taken at once
// (the transport goes on), a ping and another call's answer pass while
// the judge thinks, and the verdict sends the write on.
func TestJudgeHoldsOnlyItsWrite(t *testing.T) {
	d := judgeDriver(t)
	taken, acts := d.host(call("5", "cancel_pending_order", cancelArgs), yes...)
	if !taken {
		t.Fatalf("the judged write was not taken over: %s", describe(acts))
	}
	j := one[Judge](t, acts).J
	if len(only[ToServer](acts)) != 0 || len(only[ToHost](acts)) != 0 {
		t.Fatalf("the write went somewhere before its verdict: %s", describe(acts))
	}
	if taken, _ := d.host(`{"jsonrpc":"2.0","id":6,"method":"ping"}`); taken {
		t.Fatal("a ping waited for the judge")
	}
	d.host(call("7", "get_user_details", `{"user_id":"user_1"}`))
	if taken, acts := d.server(result("7", `{"user_id":"user_1"}`, false)); taken || len(acts) != 0 {
		t.Fatalf("an answer waited for the judge: %s", describe(acts))
	}
	_, acts = d.handle(Judged{J: j, Verdict: d.approved(j, verdict(0.95, false))})
	if s := one[ToServer](t, acts); s.Own || idOf(s.Line) != "5" {
		t.Fatalf("after a yes: %s", describe(acts))
	}
	if len(only[Log](acts)) != 1 {
		t.Errorf("the confirm log got no judgment: %s", describe(acts))
	}
}

func TestJudgeRefuses(t *testing.T) {
	d := judgeDriver(t)
	_, acts := d.host(call("5", "cancel_pending_order", cancelArgs), yes...)
	j := one[Judge](t, acts).J
	_, acts = d.handle(Judged{J: j, Verdict: verdict(0.15, true)})
	h := one[ToHost](t, acts)
	if len(only[ToServer](acts)) != 0 || idOf(h.Line) != "5" || !strings.Contains(string(h.Line), "Refused") {
		t.Fatalf("a failed write: %s", describe(acts))
	}
}

// TestCloseWhileVerdictPending: the session (or the host) ends while the
// judge thinks: the write is answered with an error and never sent, and
// the verdict that comes after does nothing.
func TestCloseWhileVerdictPending(t *testing.T) {
	for _, ev := range []Event{Closing{}, HostClosed{}} {
		t.Run(fmt.Sprintf("%T", ev), func(t *testing.T) {
			d := judgeDriver(t)
			_, acts := d.host(call("5", "cancel_pending_order", cancelArgs), yes...)
			j := one[Judge](t, acts).J
			_, acts = d.handle(ev)
			h := one[ToHost](t, acts)
			var m struct {
				ID    int `json:"id"`
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(h.Line, &m) != nil || m.ID != 5 || m.Error.Code != ErrSessionEnded {
				t.Fatalf("the held write at close: %s", h.Line)
			}
			_, acts = d.handle(Judged{J: j, Verdict: d.approved(j, verdict(0.95, false))})
			if len(only[ToServer](acts)) != 0 || len(only[ToHost](acts)) != 0 {
				t.Fatalf("a verdict after close acted: %s", describe(acts))
			}
		})
	}
}

// TestGuardsRefuseAndDecideOnServerReading: an enforced rule refuses a
// write in its line's place; the same write spelled with a member name
// two decoders read differently is refused before any rule reads it.
func TestGuardsRefuseAndDecideOnServerReading(t *testing.T) {
	d := newDriver(t, Config{Server: "retail", Guards: &GuardsConfig{Domain: guards.Retail}})
	taken, acts := d.host(call("5", "cancel_pending_order", `{"order_id":"#W1a","reason":"found it cheaper"}`))
	if h := one[ToHost](t, acts); !taken || !strings.Contains(string(h.Line), "retail.cancel_reason") {
		t.Fatalf("refused write: %s", describe(acts))
	}
	taken, acts = d.host(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"Name":"cancel_pending_order","arguments":{"order_id":"#W1a","reason":"found it cheaper"}}}`)
	if h := one[ToHost](t, acts); !taken || !strings.Contains(string(h.Line), `\"Name\"`) {
		t.Fatalf("a write spelled Name: %s", describe(acts))
	}
	// A write the rules allow goes on, unchanged, by the transport.
	taken, acts = d.host(call("7", "cancel_pending_order", cancelArgs))
	if taken || len(only[ToServer](acts)) != 0 {
		t.Fatalf("an allowed write: taken %v %s", taken, describe(acts))
	}
}

// TestCommitIDCollision: the host has a request of id hoist-commit-1 in
// flight when hoist_commit makes its first call: the call takes another
// id, the host's answer is the host's, and the commit reports its own
// call's result (issue 23, point 3).
func TestCommitIDCollision(t *testing.T) {
	d := newDriver(t, Config{Server: "retail", Commit: true})
	d.host(call(`"hoist-commit-1"`, "get_user_details", `{"user_id":"user_1"}`))
	taken, acts := d.host(call("9", mcpmsg.CommitTool, `{"calls":[{"name":"get_order_details","arguments":{"order_id":"#W1a"}}]}`))
	if !taken {
		t.Fatal("hoist_commit reached the server")
	}
	req := one[ToServer](t, acts)
	if idOf(req.Line) == `"hoist-commit-1"` {
		t.Fatalf("the commit's call took the host's id: %s", req.Line)
	}
	taken, acts = d.server(result(`"hoist-commit-1"`, "the host's user", false))
	if taken || len(acts) != 0 {
		t.Fatalf("the host's answer was taken for the commit's: %s", describe(acts))
	}
	taken, acts = d.server(result(idOf(req.Line), "the order", false))
	h := one[ToHost](t, acts)
	if !taken || idOf(h.Line) != "9" || !strings.Contains(string(h.Line), "the order") || strings.Contains(string(h.Line), "the host's user") {
		t.Fatalf("the commit's answer: %s", describe(acts))
	}
}

// TestCommitServerClosed: the server's output ends while a commit's call
// is in flight: the commit is answered, the call failed and the rest not
// run.
func TestCommitServerClosed(t *testing.T) {
	d := newDriver(t, Config{Server: "retail", Commit: true})
	d.host(call("9", mcpmsg.CommitTool, `{"calls":[{"name":"a","arguments":{}},{"name":"b","arguments":{}}]}`))
	_, acts := d.handle(ServerClosed{})
	h := one[ToHost](t, acts)
	if idOf(h.Line) != "9" || !strings.Contains(string(h.Line), "closed before it answered") {
		t.Fatalf("the commit at the server's end: %s", h.Line)
	}
}

// heldBatch hands a batch over as hostLine does: screened part by part,
// and held whole when a part is a checked write.
func (d *driver) heldBatch(line string) (held bool, taken bool, acts []Action) {
	d.t.Helper()
	b, held := d.m.ScreenBatch(mcpmsg.ReadView([]byte(line)))
	if !held {
		return false, false, nil
	}
	taken, acts = d.handle(b)
	return true, taken, acts
}

// TestBatchHoldsWhole: a batch with a write an enforced rule refuses is
// answered whole and nothing of it is sent; a batch whose writes the rules
// allow goes on unchanged by the transport; a batch of reads is not held.
func TestBatchHoldsWhole(t *testing.T) {
	d := newDriver(t, Config{Server: "retail", Guards: &GuardsConfig{Domain: guards.Retail}})
	refused := `[` + call("10", "cancel_pending_order", `{"order_id":"#W1a","reason":"found it cheaper"}`) + `,` + call("11", "get_order_details", `{"order_id":"#W1a"}`) + `]`
	held, taken, acts := d.heldBatch(refused)
	h := one[ToHost](t, acts)
	if !held || !taken || len(only[ToServer](acts)) != 0 || !strings.Contains(string(h.Line), `"id":10`) || !strings.Contains(string(h.Line), `"id":11`) || !strings.Contains(string(h.Line), batchNotSent) {
		t.Fatalf("a batch with a refused write: held %v taken %v %s", held, taken, describe(acts))
	}
	allowed := `[` + call("12", "cancel_pending_order", cancelArgs) + `,` + call("13", "get_order_details", `{"order_id":"#W1a"}`) + `]`
	if held, taken, acts := d.heldBatch(allowed); !held || taken || len(only[ToHost](acts)) != 0 {
		t.Fatalf("an allowed batch: held %v taken %v %s", held, taken, describe(acts))
	}
	if held, _, _ := d.heldBatch(`[` + call("14", "get_order_details", `{"order_id":"#W1a"}`) + `]`); held {
		t.Fatal("a batch of reads was held")
	}
}

// TestJudgeApprovalBoundToTheCall: the judge's yes passes only the call it
// approved, under the judge's policy, before it lapses. The same approval
// replayed for the same write with other arguments, an approval given
// under another policy version, and one that lapsed each leave the write
// unsent, and the confirm log says why.
func TestJudgeApprovalBoundToTheCall(t *testing.T) {
	other := `{"order_id":"#W2a","reason":"no longer needed"}`
	for _, tc := range []struct {
		name    string
		approve func(d *driver, j *Judging) judge.Approval
		want    string
	}{
		{"other arguments", func(d *driver, j *Judging) judge.Approval {
			return judge.Approve(judge.MethodToolsCall, j.Call.Name, []byte(other), testPolicy, d.m.now(), 0)
		}, "the approval is for another call"},
		{"other tool", func(d *driver, j *Judging) judge.Approval {
			return judge.Approve(judge.MethodToolsCall, "return_delivered_order_items", j.Call.Args, testPolicy, d.m.now(), 0)
		}, "the approval is for another call"},
		{"other policy version", func(d *driver, j *Judging) judge.Approval {
			return judge.Approve(judge.MethodToolsCall, j.Call.Name, j.Call.Args, "confirm-judge confirm/0 threshold 0.5", d.m.now(), 0)
		}, "the approval is of policy"},
		{"lapsed", func(d *driver, j *Judging) judge.Approval {
			return judge.Approve(judge.MethodToolsCall, j.Call.Name, j.Call.Args, testPolicy, d.m.now().Add(-2*time.Minute), time.Minute)
		}, "the approval lapsed at"},
		{"none", func(d *driver, j *Judging) judge.Approval { return judge.Approval{} }, "no approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := judgeDriver(t)
			_, acts := d.host(call("5", "cancel_pending_order", cancelArgs), yes...)
			j := one[Judge](t, acts).J
			v := verdict(0.95, false)
			v.Approval = tc.approve(d, j)
			_, acts = d.handle(Judged{J: j, Verdict: v})
			h := one[ToHost](t, acts)
			if len(only[ToServer](acts)) != 0 || idOf(h.Line) != "5" || !strings.Contains(string(h.Line), tc.want) || !strings.Contains(string(h.Line), `"isError":true`) {
				t.Fatalf("a yes with an approval that does not hold: %s", describe(acts))
			}
			if l := one[Log](t, acts); !strings.Contains(string(l.Line), `"approval_refused":"`+tc.want) {
				t.Errorf("the confirm log: %s", l.Line)
			}
		})
	}
	t.Run("the call approved", func(t *testing.T) {
		d := judgeDriver(t)
		_, acts := d.host(call("5", "cancel_pending_order", `{"reason":"no longer needed","order_id":"#W\u0031a"}`), yes...)
		j := one[Judge](t, acts).J
		// The same call, its members in another order and a character
		// escaped: one digest.
		v := verdict(0.95, false)
		v.Approval = judge.Approve(judge.MethodToolsCall, "cancel_pending_order", []byte(cancelArgs), testPolicy, d.m.now(), 0)
		_, acts = d.handle(Judged{J: j, Verdict: v})
		if s := one[ToServer](t, acts); idOf(s.Line) != "5" {
			t.Fatalf("the approved call: %s", describe(acts))
		}
		if l := one[Log](t, acts); !strings.Contains(string(l.Line), `"approval":{"digest":"`+judge.CallDigest("tools/call", "cancel_pending_order", []byte(cancelArgs))) {
			t.Errorf("the confirm log lacks the approval: %s", l.Line)
		}
	})
}

// TestCommitApprovalBoundToTheCall: a hoist_commit's call the judge
// considers goes to the server only with an approval of that call.
func TestCommitApprovalBoundToTheCall(t *testing.T) {
	d := newDriver(t, Config{Server: "retail", Session: "s", Commit: true, ConfirmLog: true,
		Guards: &GuardsConfig{Domain: guards.Retail, Judge: &JudgeConfig{Enforce: true, Policy: testPolicy}}})
	commit := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"hoist_commit","arguments":{"calls":[{"name":"cancel_pending_order","arguments":` + cancelArgs + `}]}}}`
	_, acts := d.host(commit, yes...)
	j := one[Judge](t, acts).J
	v := verdict(0.95, false)
	v.Approval = judge.Approve(judge.MethodToolsCall, j.Call.Name, []byte(`{"order_id":"#W2a","reason":"no longer needed"}`), testPolicy, d.m.now(), 0)
	_, acts = d.handle(Judged{J: j, Verdict: v})
	h := one[ToHost](t, acts)
	if len(only[ToServer](acts)) != 0 || idOf(h.Line) != "9" || !strings.Contains(string(h.Line), "the approval is for another call") {
		t.Fatalf("a commit's call with another call's approval: %s", describe(acts))
	}
}
