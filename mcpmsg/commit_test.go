package mcpmsg

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

func TestCommitToolEntry(t *testing.T) {
	if !jsontext.Valid([]byte(CommitToolEntry)) {
		t.Fatal("CommitToolEntry is not JSON")
	}
	tools, _ := ReadTools([]byte(`{"tools":[` + CommitToolEntry + `]}`))
	if len(tools) != 1 || tools[0].Name != CommitTool {
		t.Fatalf("ReadTools reads %+v", tools)
	}
	if ro, ok := tools[0].ReadOnly(); !ok || ro {
		t.Errorf("readOnlyHint %v (%v): hoist_commit writes", ro, ok)
	}
	if _, ok := jsontext.Lookup(tools[0].InputSchema, "properties"); !ok {
		t.Errorf("input schema %s has no properties", tools[0].InputSchema)
	}
}

func TestAppendTool(t *testing.T) {
	for _, tc := range []struct{ name, resp, want string }{
		{"after the server's tools", `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}], "nextCursor":"x"}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"},{"name":"b"}], "nextCursor":"x"}}`},
		{"an empty list", `{"id":2,"result":{"tools":[ ]}}`, `{"id":2,"result":{"tools":[ {"name":"b"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AppendTool([]byte(tc.resp), `{"name":"b"}`)
			if !ok || string(got) != tc.want {
				t.Errorf("AppendTool = %s, %v\nwant %s", got, ok, tc.want)
			}
		})
	}
	if _, ok := AppendTool([]byte(`{"id":2,"error":{"code":1,"message":"no"}}`), `{}`); ok {
		t.Error("AppendTool took an error response")
	}
}

func TestAppendInstructions(t *testing.T) {
	for _, tc := range []struct{ name, resp, want string }{
		{"after the server's own", `{"id":1,"result":{"protocolVersion":"2025-06-18","instructions":"A shop.","serverInfo":{"name":"s"}}}`,
			`{"id":1,"result":{"protocolVersion":"2025-06-18","instructions":"A shop.\n\nUse it.","serverInfo":{"name":"s"}}}`},
		{"none given", `{"id":1,"result":{"protocolVersion":"2025-06-18"}}`,
			`{"id":1,"result":{"instructions":"Use it.","protocolVersion":"2025-06-18"}}`},
		{"an empty result", `{"id":1,"result":{}}`, `{"id":1,"result":{"instructions":"Use it."}}`},
		{"empty instructions", `{"id":1,"result":{"instructions":""}}`, `{"id":1,"result":{"instructions":"Use it."}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AppendInstructions([]byte(tc.resp), "Use it.")
			if !ok || string(got) != tc.want {
				t.Errorf("AppendInstructions = %s, %v\nwant %s", got, ok, tc.want)
			}
			if in := ReadInitialized(jsonrpc.Classify(got).Result); !strings.HasSuffix(in.Instructions, "Use it.") {
				t.Errorf("instructions read back %q", in.Instructions)
			}
		})
	}
}

func TestReadCommit(t *testing.T) {
	got, err := ReadCommit([]byte(`{"calls":[{"name":"cancel_pending_order","arguments":{"order_id":"#W1a","reason":"no longer needed"}},{"name":"get_order_details"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []CommitCall{
		{Name: "cancel_pending_order", Args: json.RawMessage(`{"order_id":"#W1a","reason":"no longer needed"}`)},
		{Name: "get_order_details"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ args, says string }{
		{`[]`, "must be an object"},
		{`{}`, `"calls" must be a list`},
		{`{"calls":[]}`, `"calls" is empty`},
		{`{"calls":[{"arguments":{}}]}`, `calls[0]: each call needs a "name"`},
		{`{"calls":[{"name":"a"},{"name":"b","arguments":[1]}]}`, "calls[1].arguments: must be an object"},
		{`{"calls":[{"name":"hoist_commit","arguments":{}}]}`, "cannot call itself"},
	} {
		if _, err := ReadCommit([]byte(tc.args)); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ReadCommit(%s): err %v, want it to say %q", tc.args, err, tc.says)
		}
	}
}

func TestCommitID(t *testing.T) {
	id := CommitID(3)
	if string(id) != `"hoist-commit-3"` || !IsCommitID(id) || !IsProxyID(id) {
		t.Errorf("CommitID(3) = %s (commit %v, proxy %v)", id, IsCommitID(id), IsProxyID(id))
	}
	if IsCommitID(ProxyID(3)) || IsCommitID([]byte(`3`)) {
		t.Error("a lookup's id or a host's id reads as a commit's")
	}
}

func TestAppendCommitResult(t *testing.T) {
	steps := []CommitStep{
		{CommitCall: CommitCall{Name: "modify_pending_order_address", Args: json.RawMessage(`{"order_id":"#W1a"}`)}, Status: CommitDone, Text: `{"order_id": "#W1a"}`},
		{CommitCall: CommitCall{Name: "cancel_pending_order", Args: json.RawMessage(`{"order_id":"#W1b","reason":"found it cheaper"}`)}, Status: CommitRefused, Text: "Refused by the policy check, so …"},
		{CommitCall: CommitCall{Name: "cancel_pending_order", Args: json.RawMessage(`{"order_id":"#W1c"}`)}, Status: CommitNotRun},
	}
	line := AppendCommitResult(nil, json.RawMessage(`7`), steps)
	m := jsonrpc.Classify(line)
	if m.Kind != jsonrpc.Response || string(m.ID) != "7" {
		t.Fatalf("not a response to 7: %s", line)
	}
	res := ReadResult(m.Result)
	if !res.IsError {
		t.Error("a commit that stopped is not an error")
	}
	want := "hoist_commit stopped at call 2 of 3, which was refused by the policy check; 1 call(s) were made, and the 1 after it were not run.\n\n" +
		"1. modify_pending_order_address {\"order_id\":\"#W1a\"}: done\n{\"order_id\": \"#W1a\"}\n\n" +
		"2. cancel_pending_order {\"order_id\":\"#W1b\",\"reason\":\"found it cheaper\"}: refused\nRefused by the policy check, so …\n\n" +
		"3. cancel_pending_order {\"order_id\":\"#W1c\"}: not run"
	if got := res.Text(); got != want {
		t.Errorf("text\n%s\nwant\n%s", got, want)
	}
	var sc struct{ Calls []CommitStep }
	if err := json.Unmarshal(res.Structured, &sc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(steps, sc.Calls); diff != "" {
		t.Errorf("structuredContent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(steps, ReadCommitResult(res.Structured)); diff != "" {
		t.Errorf("ReadCommitResult (-want +got):\n%s", diff)
	}
	if got := ReadCommitResult([]byte(`{"content":[]}`)); got != nil {
		t.Errorf("ReadCommitResult of another result: %+v", got)
	}
	all := AppendCommitResult(nil, json.RawMessage(`8`), steps[:1])
	if r := ReadResult(jsonrpc.Classify(all).Result); r.IsError || !strings.HasPrefix(r.Text(), "hoist_commit made all 1 call(s).") {
		t.Errorf("a commit that made every call: error %v, text %q", r.IsError, r.Text())
	}
}
