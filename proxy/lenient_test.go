package proxy_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
)

// Issue 23, point 1: the guards decide on what the server will execute.
// The shop (hoist-mcp-demo) decodes requests with Go's encoding/json into
// tagged structs, which match member names regardless of case; a policy
// that read names exactly let "Name", "Method" or "Params" carry a write
// past it. The session has read user_3, then order #W4a, which is user_4's:
// every variant below is a cancel of #W4a, and none may reach the shop.

// spelledCancels are the same refused cancel of #W4a, spelled so that some
// decoder reads it differently from an exact one.
var spelledCancels = []struct{ name, line, member string }{
	{"Name and Arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"Name":"cancel_pending_order","Arguments":{"order_id":"#W4a","reason":"no longer needed"}}}`, "Name"},
	{"Method", `{"jsonrpc":"2.0","id":5,"Method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a","reason":"no longer needed"}}}`, "Method"},
	{"Params", `{"jsonrpc":"2.0","id":5,"method":"tools/call","Params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a","reason":"no longer needed"}}}`, "Params"},
	{"Order_ID", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"Order_ID":"#W4a","reason":"no longer needed"}}}`, "Order_ID"},
	{"a later Name", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W4a","reason":"no longer needed"},"Name":"cancel_pending_order"}}`, "Name"},
	{"long s", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{},"argument\u017f":{"order_id":"#W4a","reason":"no longer needed"}}}`, "argumentſ"},
	{"Kelvin sign", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a","reason":"no longer needed"}},"\u212Aind":1}`, ""},
}

// TestGuardsReadWhatTheServerReads drives the built proxy in front of the
// shop over stdio and over --listen: each spelling is refused with an error
// naming the member (or, when every reader agrees, by the policy), and the
// shop's journal shows no cancel.
func TestGuardsReadWhatTheServerReads(t *testing.T) {
	for _, transport := range []string{"stdio", "listen"} {
		t.Run(transport, func(t *testing.T) {
			var do func(string) string
			var journal string
			var finish func()
			if transport == "stdio" {
				var p *proc
				p, journal, _, _ = openShop(t, nil, "--domain", "retail", "--guards", "--commit")
				do = func(line string) string { p.send(line + "\n"); return strings.TrimSpace(p.readLine()) }
				finish = func() {
					if _, code := p.finish(); code != 0 {
						t.Errorf("exit %d; stderr:\n%s", code, p.stderr)
					}
				}
			} else {
				var server []string
				server, journal = shop(t)
				l := startListen(t, append([]string{"--domain", "retail", "--guards", "--commit", "--"}, server...)...)
				_, sid, post := openJSONSession(t, l)
				post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
				do = post
				finish = func() {
					l.do("DELETE", "", session(sid))
					l.cmd.Process.Signal(syscall.SIGTERM)
					l.wait()
				}
			}
			do(strings.TrimSpace(toolCall(3, "find_user_id_by_email", `{"email":"c3@example.com"}`)))
			do(strings.TrimSpace(toolCall(4, "get_order_details", `{"order_id":"#W4a"}`)))
			for _, c := range spelledCancels {
				got := do(c.line)
				if transport == "listen" && c.name == "Method" && strings.Contains(got, "the body must be one JSON-RPC message") {
					continue // --listen takes no body an exact reader calls no message
				}
				var r struct {
					ID     json.RawMessage `json:"id"`
					Result *struct {
						IsError bool `json:"isError"`
					} `json:"result"`
					Error *struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(got), &r); err != nil || string(r.ID) != "5" {
					t.Errorf("%s: the answer %q: %v", c.name, got, err)
					continue
				}
				switch {
				case c.member != "" && (r.Error == nil || !strings.Contains(r.Error.Message, `"`+c.member+`"`)):
					t.Errorf("%s: want an error naming %q, got %s", c.name, c.member, got)
				case c.member == "" && (r.Result == nil || !r.Result.IsError || !strings.Contains(got, "retail.one_user")):
					t.Errorf("%s: want the policy's refusal, got %s", c.name, got)
				}
			}
			// hoist_commit sends its calls' arguments as written: the same rule.
			got := do(strings.TrimSpace(commitCall(9, inner("cancel_pending_order", `{"Order_ID":"#W4a","reason":"no longer needed"}`))))
			if !strings.Contains(got, "refused") || !strings.Contains(got, `\"Order_ID\"`) {
				t.Errorf("hoist_commit of a cancel spelled Order_ID: %s", got)
			}
			finish()
			for _, c := range servedCalls(t, journal) {
				if strings.HasPrefix(c, "cancel_pending_order") {
					t.Errorf("a cancel reached the shop: %s", c)
				}
			}
		})
	}
}
