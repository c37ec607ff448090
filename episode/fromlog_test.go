package episode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/mcplog"
)

// parseLog reads a log given as its header and lines of the form
// "t_ms from message" (message is JSON, or raw:text).
func parseLog(t testing.TB, header string, lines ...string) *mcplog.Log {
	t.Helper()
	var b strings.Builder
	b.WriteString(header + "\n")
	for _, l := range lines {
		parts := strings.SplitN(l, " ", 3)
		if len(parts) != 3 {
			t.Fatalf("bad test line %q", l)
		}
		if raw, ok := strings.CutPrefix(parts[2], "raw:"); ok {
			q, _ := json.Marshal(raw)
			fmt.Fprintf(&b, `{"t_ms":%s,"from":%q,"raw":%s}`+"\n", parts[0], parts[1], q)
			continue
		}
		fmt.Fprintf(&b, `{"t_ms":%s,"from":%q,"message":%s}`+"\n", parts[0], parts[1], parts[2])
	}
	r, err := mcplog.NewReader(strings.NewReader(b.String()), "test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return &mcplog.Log{Header: r.Header(), HeaderRaw: r.HeaderRaw(), Entries: entries}
}

func header(session string, startMS int64, extra string) string {
	return fmt.Sprintf(`{"hoist_mcp_log":2,"session":%q,"started_unix_ms":%d,"server_command":["srv"],"domain":null,"agent_model":null,"host_session":"h1"%s}`,
		session, startMS, extra)
}

const (
	initReq   = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"1"}}}`
	initResp  = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"demo","version":"0.1"}}}`
	listReq   = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	listResp  = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"lookup","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"annotations":{"readOnlyHint":true}},{"name":"update","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false}},{"name":"misc","inputSchema":{"type":"object"}}]}}`
	callTmpl  = `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`
	okTmpl    = `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}],"isError":false}}`
	errorTmpl = `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}],"isError":true}}`
)

func callMsg(id, tool, args string) string { return fmt.Sprintf(callTmpl, id, tool, args) }
func okMsg(id, text string) string         { return fmt.Sprintf(okTmpl, id, text) }

func TestFromLog(t *testing.T) {
	log := parseLog(t, header("s1", 1790198400000, ""),
		"0 client "+initReq,
		"2 server "+initResp,
		"3 server raw:Listening on stdio",
		"4 client "+listReq,
		"6 server "+listResp,
		`100 context {"role":"user","content":"look up hello"}`,
		"200 client "+callMsg("2", "lookup", `{"text":"hello"}`),
		"201 client "+callMsg(`"b"`, "lookup", `{"text":"bye"}`),
		"205 server "+`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"one"},{"type":"image","data":"x"},{"type":"text","text":"two"}]}}`,
		"206 server "+`{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"unknown text"}}`,
		"207 server "+okMsg("2", "a second response is not the result"),
		`900 context {"role":"assistant","content":[{"type":"text","text":"done"}]}`,
		"3000 client "+callMsg("3", "update", `{"text":"hi","fail":true}`),
		"3004 server "+fmt.Sprintf(errorTmpl, "3", "failed"),
		"3600 client "+`[`+callMsg("4", "misc", `{}`)+`,`+callMsg("5", "nolisted", `{"n":1}`)+`]`,
		"3620 client "+`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"user"}}`,
		"3621 server "+okMsg("4", "late"),
		"3630 server "+okMsg("5", "five"),
		"9000 client "+callMsg("6", "lookup", `{"text":"never answered"}`),
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := func(i int, text string, isErr bool, raw string) *Result {
		return &Result{CallIndex: i, Text: text, IsError: isErr, Raw: json.RawMessage(raw)}
	}
	r0 := res(0, "one\ntwo", false, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"one"},{"type":"image","data":"x"},{"type":"text","text":"two"}]}}`)
	r1 := res(1, "unknown text", true, `{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"unknown text"}}`)
	r2 := res(2, "failed", true, fmt.Sprintf(errorTmpl, "3", "failed"))
	r3 := res(3, "late", false, okMsg("4", "late"))
	r4 := res(4, "five", false, okMsg("5", "five"))
	calls := []*Call{
		{Index: 0, ID: "2", Server: "demo", Tool: "lookup", Args: json.RawMessage(`{"text":"hello"}`), By: Agent, Turn: 0, Result: r0},
		{Index: 1, ID: `"b"`, Server: "demo", Tool: "lookup", Args: json.RawMessage(`{"text":"bye"}`), By: Agent, Turn: 0, Result: r1},
		{Index: 2, ID: "3", Server: "demo", Tool: "update", Args: json.RawMessage(`{"text":"hi","fail":true}`), By: Agent, Turn: 1, Result: r2},
		{Index: 3, ID: "4", Server: "demo", Tool: "misc", Args: json.RawMessage(`{}`), By: Agent, Turn: 2, Result: r3, Cancelled: true},
		{Index: 4, ID: "5", Server: "demo", Tool: "nolisted", Args: json.RawMessage(`{"n":1}`), By: Agent, Turn: 2, Result: r4},
		{Index: 5, ID: "6", Server: "demo", Tool: "lookup", Args: json.RawMessage(`{"text":"never answered"}`), By: Agent, Turn: 3, Cancelled: true},
	}
	want := &Episode{
		ID:          "s1",
		Source:      SourceMCP,
		HostSession: "h1",
		ClientName:  "claude-code",
		Started:     time.UnixMilli(1790198400000).UTC(),
		Servers:     []Server{{Name: "demo", Session: "s1", Command: []string{"srv"}, Info: json.RawMessage(`{"name":"demo","version":"0.1"}`)}},
		Tools: []Tool{
			{Name: "lookup", Server: "demo", Kind: Read, InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
			{Name: "update", Server: "demo", Kind: Write, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
			{Name: "misc", Server: "demo", Kind: Generic, InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
		Events: []Event{
			{Type: EventMessage, TMS: 100, Message: &Message{Role: "user", Text: "look up hello"}},
			{Type: EventCall, TMS: 200, Call: calls[0]},
			{Type: EventCall, TMS: 201, Call: calls[1]},
			{Type: EventResult, TMS: 205, Result: r0},
			{Type: EventResult, TMS: 206, Result: r1},
			{Type: EventMessage, TMS: 900, Message: &Message{Role: "assistant", Text: "done"}},
			{Type: EventCall, TMS: 3000, Call: calls[2]},
			{Type: EventResult, TMS: 3004, Result: r2},
			{Type: EventCall, TMS: 3600, Call: calls[3]},
			{Type: EventCall, TMS: 3600, Call: calls[4]},
			{Type: EventResult, TMS: 3621, Result: r3},
			{Type: EventResult, TMS: 3630, Result: r4},
			{Type: EventCall, TMS: 9000, Call: calls[5]},
		},
		Turns: []Turn{
			{Index: 0, Calls: []int{0, 1}, StartMS: 200, EndMS: 206},
			{Index: 1, Calls: []int{2}, StartMS: 3000, EndMS: 3004},
			{Index: 2, Calls: []int{3, 4}, StartMS: 3600, EndMS: 3630},
			{Index: 3, Calls: []int{5}, StartMS: 9000, EndMS: 9000},
		},
	}
	if diff := cmp.Diff(want, ep); diff != "" {
		t.Errorf("episode (-want +got):\n%s", diff)
	}
	for _, c := range ep.Calls() {
		if c.Result != nil && c.Result.CallIndex != c.Index {
			t.Errorf("call %d's result names call %d", c.Index, c.Result.CallIndex)
		}
	}
}

func TestFromLogHeaderAndOptions(t *testing.T) {
	log := parseLog(t, header("s1", 1000, `,"server_name":"docs"`),
		"0 client "+initReq, "2 server "+initResp, "3 client "+listReq, "4 server "+listResp,
		"10 client "+callMsg("2", "lookup", `{}`), "12 server "+okMsg("2", "x"))
	log.Header.Domain = mcplog.StringOrNil("support")
	log.Header.AgentModel = mcplog.StringOrNil("claude-opus")
	ep, err := FromLog(log, Options{Qualify: true})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Domain != "support" || ep.AgentModel != "claude-opus" || ep.Servers[0].Name != "docs" {
		t.Errorf("domain %q, agent model %q, server %q", ep.Domain, ep.AgentModel, ep.Servers[0].Name)
	}
	if got := ep.Calls()[0].Tool; got != "docs::lookup" {
		t.Errorf("qualified call tool = %q", got)
	}
	if ep.Tool("docs::update") == nil || ep.Tool("docs::update").Kind != Write {
		t.Errorf("qualified tools: %+v", ep.Tools)
	}
}

func TestServerName(t *testing.T) {
	tests := []struct {
		name   string
		extra  string
		domain string
		init   bool
		want   string
	}{
		{"server_name first", `,"server_name":"tickets"`, "orders", true, "tickets"},
		{"then domain", "", "orders", true, "orders"},
		{"then initialize's name", "", "", true, "demo"},
		{"else the session", "", "", false, "s9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			if tt.init {
				lines = []string{"0 client " + initReq, "1 server " + initResp}
			}
			log := parseLog(t, header("s9", 0, tt.extra), lines...)
			log.Header.Domain = mcplog.StringOrNil(tt.domain)
			ep, err := FromLog(log, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ep.Servers[0].Name; got != tt.want {
				t.Errorf("server name %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProxyCalls covers active mode: the proxy's lookups (ids hoist-…) are
// calls by the proxy, joining the agent's turn while its answer is held; the
// first response is the result, and the agent's turn runs until the proxy
// answers it.
func TestProxyCalls(t *testing.T) {
	log := parseLog(t, header("s1", 0, ""),
		"10 client "+callMsg("7", "get_user", `{"id":"u1"}`),
		"15 server "+okMsg("7", `{"orders":["#W1"]}`),
		"16 proxy "+callMsg(`"hoist-1"`, "get_order", `{"id":"#W1"}`),
		"600 server "+okMsg(`"hoist-1"`, "order W1"),
		"601 proxy "+okMsg("7", `{"orders":["#W1"]} + also looked up`),
		// 885 ms after the server's response but 299 ms after the proxy's
		// answer to the agent: the same turn.
		"900 client "+callMsg("8", "get_order", `{"id":"#W2"}`),
		"910 server "+okMsg("8", "order W2"),
		// A refusal the proxy answers itself (guards).
		"5000 client "+callMsg("9", "cancel", `{"id":"#W1"}`),
		"5001 proxy "+fmt.Sprintf(errorTmpl, "9", "Refused by the policy check"),
		// A lookup with no call of the turn waiting starts a turn.
		"6000 proxy "+callMsg(`"hoist-2"`, "get_order", `{"id":"#W3"}`),
		"6005 server "+okMsg(`"hoist-2"`, "order W3"),
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		ID    string
		By    Actor
		Turn  int
		Text  string
		Error bool
	}
	var gots []got
	for _, c := range ep.Calls() {
		gots = append(gots, got{c.ID, c.By, c.Turn, c.Result.Text, c.Result.IsError})
	}
	want := []got{
		{"7", Agent, 0, `{"orders":["#W1"]}`, false},
		{`"hoist-1"`, Proxy, 0, "order W1", false},
		{"8", Agent, 0, "order W2", false},
		{"9", Agent, 1, "Refused by the policy check", true},
		{`"hoist-2"`, Proxy, 2, "order W3", false},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestToolsListFromProxy(t *testing.T) {
	log := parseLog(t, header("s1", 0, ""),
		"0 client "+listReq,
		"2 server "+`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{}}]}}`,
		"3 proxy "+`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{},"annotations":{"readOnlyHint":true}},{"name":"hoist_commit","inputSchema":{}}]}}`,
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range ep.Tools {
		names = append(names, tl.Name+":"+string(tl.Kind))
	}
	if diff := cmp.Diff([]string{"a:read", "hoist_commit:generic"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestKindOf(t *testing.T) {
	for in, want := range map[string]Kind{
		`{"readOnlyHint":true}`:                         Read,
		`{"readOnlyHint":false,"destructiveHint":true}`: Write,
		`{"title":"x"}`:                                 Generic,
		`{"readOnlyHint":"yes"}`:                        Generic,
		``:                                              Generic,
		`null`:                                          Generic,
	} {
		if got := KindOf(json.RawMessage(in)); got != want {
			t.Errorf("KindOf(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFromLogsMerge(t *testing.T) {
	ctx1 := `{"role":"user","content":"ticket 42 please"}`
	ctx2 := `{"role":"assistant","content":"looking"}`
	ctx3 := `{"role":"user","content":"yes"}`
	// tickets starts at 1000, docs at 1005: docs' t_ms are 5 ms behind.
	tickets := parseLog(t, header("t-session", 1000, `,"server_name":"tickets"`),
		"0 client "+listReq,
		"1 server "+`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_ticket","inputSchema":{},"annotations":{"readOnlyHint":true}}]}}`,
		"100 context "+ctx1,
		"200 context "+ctx2,
		"201 client "+callMsg("2", "get_ticket", `{"id":"42"}`),
		"210 server "+okMsg("2", `{"id":"42","topic":"billing-faq"}`),
		"3000 context "+ctx3,
		"3001 client "+callMsg("3", "get_ticket", `{"id":"43"}`),
		// tickets' server dies: call 3 is never answered.
	)
	docs := parseLog(t, header("d-session", 1005, `,"server_name":"docs"`),
		"0 client "+listReq,
		"1 server "+`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{},"annotations":{"readOnlyHint":true}}]}}`,
		"96 context "+ctx1, // 1101 absolute: after tickets' copy at 1100
		"196 context "+ctx2,
		// 1210+300: within 500 ms of the turn's last answer, and passes a
		// value first seen in it: a new turn.
		"505 client "+callMsg("2", "search", `{"q":"billing-faq"}`),
		"510 server "+okMsg("2", "faq text"),
		"2995 context "+ctx3,
		"3000 context "+ctx3, // the user said yes twice
		"3100 client "+callMsg("3", "search", `{"q":"refund"}`),
		"3110 server "+okMsg("3", "refund text"),
		"9000 client "+callMsg("4", "search", `{"q":"later"}`),
		"9010 server "+okMsg("4", "later text"),
	)
	ep, err := FromLogs([]*mcplog.Log{docs, tickets}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.ID != "t-session" || !ep.Started.Equal(time.UnixMilli(1000)) {
		t.Errorf("ID %q started %v: want the earliest log's", ep.ID, ep.Started)
	}
	var tools []string
	for _, tl := range ep.Tools {
		tools = append(tools, tl.Name)
	}
	if diff := cmp.Diff([]string{"tickets::get_ticket", "docs::search"}, tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	type row struct {
		TMS       int64
		What      string
		Turn      int
		Cancelled bool
	}
	var rows []row
	for _, ev := range ep.Events {
		switch ev.Type {
		case EventMessage:
			rows = append(rows, row{ev.TMS, ev.Message.Role + ": " + ev.Message.Text, -1, false})
		case EventCall:
			rows = append(rows, row{ev.TMS, "call " + ev.Call.Tool + " " + string(ev.Call.Args), ev.Call.Turn, ev.Call.Cancelled})
		case EventResult:
			rows = append(rows, row{ev.TMS, "result " + ev.Result.Text, -1, false})
		}
	}
	want := []row{
		{100, "user: ticket 42 please", -1, false},
		{200, "assistant: looking", -1, false},
		{201, `call tickets::get_ticket {"id":"42"}`, 0, false},
		{210, `result {"id":"42","topic":"billing-faq"}`, -1, false},
		{510, `call docs::search {"q":"billing-faq"}`, 1, false},
		{515, "result faq text", -1, false},
		{3000, "user: yes", -1, false},
		{3001, `call tickets::get_ticket {"id":"43"}`, 2, true},
		{3005, "user: yes", -1, false},
		{3105, `call docs::search {"q":"refund"}`, 3, false},
		{3115, "result refund text", -1, false},
		{9005, `call docs::search {"q":"later"}`, 4, false},
		{9015, "result later text", -1, false},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("merged events (-want +got):\n%s", diff)
	}
}

func TestFromLogsSameServerName(t *testing.T) {
	a := parseLog(t, header("a", 0, `,"server_name":"x"`))
	b := parseLog(t, header("b", 0, `,"server_name":"x"`))
	_, err := FromLogs([]*mcplog.Log{a, b}, Options{})
	if !errors.Is(err, ErrSameServerName) {
		t.Fatalf("FromLogs of two servers named x: %v", err)
	}
	if _, err := FromLogs(nil, Options{}); err == nil {
		t.Error("FromLogs(nil) succeeded")
	}
}

func TestMetaSidecar(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s1.jsonl")
	os.WriteFile(path, []byte(header("s1", 0, "")+"\n"+`{"t_ms":0,"from":"client","message":`+initReq+"}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s1.meta.json"), []byte(`{"task_id": "27", "reward": 0.5, "model": "gpt-4.1", "domain": "retail", "trial": 2}`), 0o600)
	ep, err := ReadLog(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.TaskID != "27" || ep.Trial != 2 || ep.Reward == nil || *ep.Reward != 0.5 || ep.AgentModel != "gpt-4.1" || ep.Domain != "retail" {
		t.Errorf("meta not applied: task %q trial %d reward %v model %q domain %q", ep.TaskID, ep.Trial, ep.Reward, ep.AgentModel, ep.Domain)
	}
	ep, err = ReadLog(path, Options{NoMeta: true})
	if err != nil {
		t.Fatal(err)
	}
	if ep.TaskID != "" || ep.Reward != nil || ep.AgentModel != "" || ep.ClientName != "claude-code" {
		t.Errorf("NoMeta: task %q reward %v model %q", ep.TaskID, ep.Reward, ep.AgentModel)
	}
	os.WriteFile(filepath.Join(dir, "s1.meta.json"), []byte(`{"task_id": 27, "trial": "x"}`), 0o600)
	if _, err := ReadLog(path, Options{}); err == nil || !strings.Contains(err.Error(), "s1.meta.json: trial: want an integer, got a JSON string") {
		t.Errorf("bad sidecar: %v", err)
	}
	if got := MetaPath("/a/b/s.jsonl.zst"); got != "/a/b/s.meta.json" {
		t.Errorf("MetaPath = %q", got)
	}
}

// TestReusedIDs: a client that reuses an id while a call is in flight gets
// each response matched to the oldest call of that id, and a cancel to the
// newest.
func TestReusedIDs(t *testing.T) {
	log := parseLog(t, header("s1", 0, ""),
		"0 client "+callMsg("1", "a", `{}`),
		"1 client "+callMsg("1", "b", `{}`),
		"2 client "+callMsg("1", "c", `{}`),
		"3 client "+`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		"5 server "+okMsg("1", "first"),
		"6 server "+okMsg("1", "second"),
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range ep.Calls() {
		text := "<none>"
		if c.Result != nil {
			text = c.Result.Text
		}
		got = append(got, fmt.Sprintf("%s %s cancelled=%v", c.Tool, text, c.Cancelled))
	}
	want := []string{"a first cancelled=false", "b second cancelled=false", "c <none> cancelled=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestDamagedAnswer: a result line damaged in the middle of a log costs
// that line only. The call it answered is marked unreadable, not
// cancelled, and it does not hold its turn open, so the episode has the
// same LLM turns as the undamaged log. The damaged line is told from the
// id it still shows, or, when even that is gone, it answers the oldest call
// its log leaves unanswered.
func TestDamagedAnswer(t *testing.T) {
	lines := []string{
		"0 client " + initReq, "2 server " + initResp,
		"1000 client " + callMsg("2", "lookup", `{"text":"a"}`), "1001 server " + okMsg("2", "A"),
		"5000 client " + callMsg("3", "lookup", `{"text":"b"}`), "5001 server " + okMsg("3", "B"),
		"9000 client " + callMsg("4", "lookup", `{"text":"c"}`), "9001 server " + okMsg("4", "C"),
		"13000 client " + callMsg("5", "update", `{"text":"d"}`), "13001 server " + okMsg("5", "D"),
	}
	clean := parseLog(t, header("s1", 0, ""), lines...)
	want, err := FromLog(clean, Options{NoMeta: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Turns) != 4 {
		t.Fatalf("the clean log has %d turns, want 4", len(want.Turns))
	}
	for name, damaged := range map[string]string{
		"id still readable": `{"t_ms":5001,"from":"server","message":{"jsonrpc":"2.0","id":3,"result":{broken}}`,
		"nothing readable":  `{"t_ms":5001,"from":"server","message": {broken`,
		"not even t_ms":     `{"t_m`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s1.jsonl")
			var b strings.Builder
			b.WriteString(header("s1", 0, "") + "\n")
			for i, l := range clean.Entries {
				if i == 5 { // the answer to call 3
					b.WriteString(damaged + "\n")
					continue
				}
				fmt.Fprintf(&b, `{"t_ms":%d,"from":%q,"message":%s}`+"\n", l.TMS, l.From, l.Message)
			}
			os.WriteFile(path, []byte(b.String()), 0o600)
			log, err := mcplog.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(log.Bad()) != 1 {
				t.Fatalf("%d bad lines, want 1", len(log.Bad()))
			}
			ep, err := FromLog(log, Options{NoMeta: true})
			if err != nil {
				t.Fatal(err)
			}
			calls := ep.Calls()
			if c := calls[1]; !c.Unreadable || c.Cancelled || c.Result != nil {
				t.Errorf("call 3: unreadable %v, cancelled %v, result %v; want unreadable only", c.Unreadable, c.Cancelled, c.Result)
			}
			for i, c := range calls {
				if i != 1 && (c.Unreadable || c.Cancelled || c.Result == nil) {
					t.Errorf("call %d: unreadable %v cancelled %v result %v", i, c.Unreadable, c.Cancelled, c.Result)
				}
			}
			if len(ep.Turns) != len(want.Turns) {
				t.Errorf("%d turns, want %d as without the damage", len(ep.Turns), len(want.Turns))
			}
		})
	}
}
