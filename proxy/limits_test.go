package proxy_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLimitsBeforeTheServer: hoist-mcp --limit and --max-calls in front of
// the retail shop, which journals each call it serves: a call over a limit
// gets a tool error naming the limit and when it frees, and never reaches
// the shop, however the host spells the tool's name for a lenient server;
// the session log has the refusal as the proxy's answer.
func TestLimitsBeforeTheServer(t *testing.T) {
	dir := t.TempDir()
	p, journal, _, _ := openShop(t, nil, "--record", dir, "--limit", "get_order_details=2/h", "--max-calls", "4")
	p.send(toolCall(3, "get_order_details", `{"order_id":"#W8a"}`))
	p.readLine()
	p.send(toolCall(4, "get_order_details", `{"order_id":"#W7a"}`))
	p.readLine()
	p.send(toolCall(5, "get_order_details", `{"order_id":"#W8a"}`))
	r := readResult(t, p.readLine())
	if string(r.ID) != "5" || !r.Result.IsError || !strings.Contains(r.text(), "--limit get_order_details=2/h") || !strings.Contains(r.text(), "frees a call in 30m, at") {
		t.Errorf("the third get_order_details in the hour: %s", r.text())
	}
	// The same tool, named so that a lenient server (the shop decodes with
	// encoding/json) runs it: never past the limit.
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_order_detail\u0073","arguments":{"order_id":"#W8a"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"Name":"get_order_details","arguments":{"order_id":"#W8a"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"find_user_id_by_email","name":"get_order_details","arguments":{"order_id":"#W8a"}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"find_user_id_by_email","NAME":"get_order_details","arguments":{"order_id":"#W8a"}}}`,
	} {
		p.send(line + "\n")
		var ans struct {
			Result *struct{ IsError bool }   `json:"result"`
			Error  *struct{ Message string } `json:"error"`
		}
		got := p.readLine()
		if err := json.Unmarshal([]byte(got), &ans); err != nil || ans.Error == nil && (ans.Result == nil || !ans.Result.IsError) {
			t.Errorf("%s\nwas answered %s: want a refusal", line, got)
		}
	}
	p.send(toolCall(10, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	p.readLine()
	p.send(toolCall(11, "find_user_id_by_email", `{"email":"c8@example.com"}`))
	p.readLine()
	p.send(toolCall(12, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	if r := readResult(t, p.readLine()); !r.Result.IsError || !strings.Contains(r.text(), "--max-calls 4") {
		t.Errorf("the fifth call of the session: %s", r.text())
	}
	if rest, code := p.finish(); code != 0 || rest != "" {
		t.Fatalf("exit %d, more output %q; stderr:\n%s", code, rest, p.stderr)
	}
	want := []string{
		`get_order_details {"order_id":"#W8a"}`, `get_order_details {"order_id":"#W7a"}`,
		`find_user_id_by_email {"email":"c7@example.com"}`, `find_user_id_by_email {"email":"c8@example.com"}`,
	}
	if got := servedCalls(t, journal); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the shop served\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var proxied []string
	for _, l := range sessionLog(t, dir) {
		if l.From == "proxy" {
			proxied = append(proxied, string(l.Message))
		}
	}
	if len(proxied) != 6 || !strings.Contains(proxied[0], "--limit get_order_details=2/h") || !strings.Contains(proxied[5], "--max-calls 4") {
		t.Errorf("the session log's proxy entries: %q", proxied)
	}
	if !strings.Contains(p.stderr.String(), "refused get_order_details: Refused by hoist-mcp's limit") {
		t.Errorf("stderr does not say a call was refused:\n%s", p.stderr)
	}
}
