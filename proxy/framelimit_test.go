package proxy_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestFrameLimitFailsClosed (issue 23, point 2): with an active feature
// on, a host line longer than --max-frame-bytes, which the proxy cannot
// inspect, is not forwarded: the host gets an error for its id, and the
// lines after it are still inspected, so the refused cancel stays refused.
// Passive recording keeps its raw pipe (TestBytesExact).
func TestFrameLimitFailsClosed(t *testing.T) {
	flowFile := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	for _, tc := range []struct {
		name  string
		args  []string
		check bool // the cancel is the guards' to refuse
	}{
		{"guards", []string{"--domain", "retail", "--guards"}, true},
		{"flow", []string{"--domain", "retail", "--flow", flowFile}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, journal, _, _ := openShop(t, nil, append([]string{"--max-frame-bytes", "4096"}, tc.args...)...)
			p.send(toolCall(3, "find_user_id_by_email", `{"email":"c3@example.com"}`))
			p.readLine()
			p.send(toolCall(4, "get_order_details", `{"order_id":"#W4a"}`))
			p.readLine()
			long := `{"jsonrpc":"2.0","id":"long-1","method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}` + "\n"
			p.send(long)
			var e struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			got := p.readLine()
			if err := json.Unmarshal([]byte(got), &e); err != nil || string(e.ID) != `"long-1"` || e.Error == nil || !strings.Contains(e.Error.Message, "--max-frame-bytes") {
				t.Errorf("the long line's answer: %s", got)
			}
			p.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
			if got := p.readLine(); got != `{"id":6,"jsonrpc":"2.0","result":{}}`+"\n" {
				t.Errorf("a ping after the long line: %s", got)
			}
			if tc.check {
				p.send(toolCall(7, "cancel_pending_order", `{"order_id":"#W4a","reason":"no longer needed"}`))
				if r := readResult(t, p.readLine()); !r.Result.IsError || !strings.Contains(r.text(), "retail.one_user") {
					t.Errorf("the cancel after the long line: %s", r.text())
				}
			}
			if _, code := p.finish(); code != 0 {
				t.Errorf("exit %d; stderr:\n%s", code, p.stderr)
			}
			if !strings.Contains(p.stderr.String(), "longer than --max-frame-bytes") {
				t.Errorf("stderr does not say why the line was refused:\n%s", p.stderr)
			}
			for _, c := range servedCalls(t, journal) {
				if strings.HasPrefix(c, "cancel_pending_order") {
					t.Errorf("a cancel reached the shop: %s", c)
				}
			}
		})
	}
}

// TestFrameLimitUpstreamAnswers: with --upstream and an active feature, a
// host line past --max-frame-bytes cannot be POSTed, and the host gets a
// JSON-RPC error for its id instead of no answer at all; the next line
// goes on.
func TestFrameLimitUpstreamAnswers(t *testing.T) {
	p := startProxy(t, nil, "--domain", "retail", "--guards", "--max-frame-bytes", "4096", "--upstream", startDemoHTTP(t))
	p.send(init16(1))
	if l := p.readLine(); !strings.Contains(l, `"serverInfo"`) {
		t.Fatalf("initialize answer: %s", l)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":"long-1","method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
	var e struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	got := p.readLine()
	if err := json.Unmarshal([]byte(got), &e); err != nil || string(e.ID) != `"long-1"` || e.Error == nil || e.Error.Code != -32600 || !strings.Contains(e.Error.Message, "--max-frame-bytes") {
		t.Fatalf("the host got %s first, want an error for the long line's id", got)
	}
	if got := p.readLine(); !strings.Contains(got, `"id":6`) || !strings.Contains(got, `"result"`) {
		t.Errorf("a ping after the long line: %s", got)
	}
	p.finish()
}
