package episode

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Lines of a stateless-era (2026-07-28) session: no initialize; every
// request names its version in _meta, server/discover names the server, and
// a call the server needs input for is answered input_required and sent
// again, under a new id, with inputResponses.
const (
	modernMeta     = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"go-sdk-client","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	discoverReq    = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`
	discoverResp   = `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"shop","version":"2"}}}}`
	modernCall     = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"cancel","arguments":{"order":"#W1"},` + modernMeta + `}}`
	inputRequired  = `{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}},"requestState":"st-1"}}`
	modernRetry    = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"cancel","arguments":{"order":"#W1"},"inputResponses":{"ok":{"action":"accept","content":{}}},"requestState":"st-1",` + modernMeta + `}}`
	modernComplete = `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"cancelled #W1"}]}}`
)

// TestModernSession checks that a stateless-era session reads as one: the
// client and the server are named from the _meta of their messages, and a
// call retried with inputResponses is one call, answered by the retry's
// result, its resultType kept in the raw result.
func TestModernSession(t *testing.T) {
	log := parseLog(t, header("s1", 1790198400000, ""),
		"0 client "+discoverReq,
		"2 server "+discoverResp,
		"100 client "+modernCall,
		"104 server "+inputRequired,
		"4000 client "+modernRetry,
		"4010 server "+modernComplete,
		"9000 client "+callMsg("4", "lookup", `{"order":"#W1"}`),
		"9004 server "+okMsg("4", "pending"),
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.ClientName != "go-sdk-client" || ep.Servers[0].Name != "shop" || string(ep.Servers[0].Info) != `{"name":"shop","version":"2"}` {
		t.Errorf("client %q, server %q %s; want go-sdk-client and shop", ep.ClientName, ep.Servers[0].Name, ep.Servers[0].Info)
	}
	calls := ep.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2 (the retry is the first call's): %+v", len(calls), calls)
	}
	c := calls[0]
	if c.Tool != "cancel" || c.ID != "2" || c.Cancelled || c.Result == nil || c.Result.Text != "cancelled #W1" || c.Result.IsError {
		t.Errorf("the retried call: %+v, result %+v", c, c.Result)
	}
	if c.Result != nil && !strings.Contains(string(c.Result.Raw), `"resultType":"complete"`) {
		t.Errorf("the result's raw response lost its resultType: %s", c.Result.Raw)
	}
	var results []string
	for _, ev := range ep.Events {
		if ev.Type == EventResult {
			results = append(results, ev.Result.Text)
		}
	}
	if d := cmp.Diff([]string{"cancelled #W1", "pending"}, results); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	want := []Turn{
		{Index: 0, Calls: []int{0}, StartMS: 100, EndMS: 4010},
		{Index: 1, Calls: []int{1}, StartMS: 9000, EndMS: 9004},
	}
	if d := cmp.Diff(want, ep.Turns); d != "" {
		t.Errorf("turns (-want +got):\n%s", d)
	}
}

// TestModernRetryNeverSent: a call answered input_required that the host
// never sends again got no answer; it is cancelled at its log's end, like a
// call the log ends without an answer to.
func TestModernRetryNeverSent(t *testing.T) {
	log := parseLog(t, header("s1", 1790198400000, ""),
		"100 client "+modernCall,
		"104 server "+inputRequired,
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	calls := ep.Calls()
	if len(calls) != 1 || !calls[0].Cancelled || calls[0].Result != nil {
		t.Errorf("calls %+v; want one, cancelled, without a result", calls)
	}
}

// TestModernRetryOtherArguments: a request with inputResponses whose tool
// or arguments differ from every call waiting for input is a call of its
// own.
func TestModernRetryOtherArguments(t *testing.T) {
	other := strings.Replace(modernRetry, `"#W1"`, `"#W2"`, 1)
	log := parseLog(t, header("s1", 1790198400000, ""),
		"100 client "+modernCall,
		"104 server "+inputRequired,
		"4000 client "+other,
		"4010 server "+modernComplete,
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, c := range ep.Calls() {
		args = append(args, string(c.Args))
	}
	if d := cmp.Diff([]string{`{"order":"#W1"}`, `{"order":"#W2"}`}, args); d != "" {
		t.Errorf("calls' arguments (-want +got):\n%s", d)
	}
}
