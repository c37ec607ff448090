package proxy_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// modernMeta is the _meta of a stateless-era request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"test","version":"0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// modernDiscover is a stateless-era host's first request.
const modernDiscover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`

// modernCall is a stateless-era tools/call of lookup with args; extra are
// more members of its params.
func modernCall(id, args, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"lookup","arguments":` + args + extra + `,` + modernMeta + `}}`
}

// TestStdioModernFlow serves a flow to a host and a server of the
// stateless era (2026-07-28) over stdio: the flow learns the server's name
// from server/discover, its lookups name their version in _meta as that
// era's server demands, the answer it appends to stays a valid 2026 result,
// and a call answered input_required and sent again with inputResponses is
// one call, decided on once its retry is answered.
func TestStdioModernFlow(t *testing.T) {
	dir := t.TempDir()
	cmd, env := fake("modern")
	p := startProxy(t, env, append([]string{"--record", dir, "--flow", demoFlow, "--"}, cmd...)...)
	p.send(modernDiscover + "\n")
	if l := p.readLine(); !strings.Contains(l, `"io.modelcontextprotocol/serverInfo":{"name":"hoist-mcp-demo"`) {
		t.Fatalf("server/discover answer: %s", l)
	}
	p.send(modernCall("2", `{"next":"b","text":"a"}`, "") + "\n")
	answer := p.readLine()
	if item := lookedUp(t, answer); item != "--- Also looked up automatically (current results; no need to repeat these calls) ---\n\nlookup {\"text\":\"b\"}:\n{\"text\":\"b\"}" {
		t.Errorf("the appended item %q; answer %s", item, answer)
	}
	var r struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &r); err != nil || r.Result["resultType"] != "complete" {
		t.Errorf("the answer with the lookups is not a complete result: %s", answer)
	}

	// input_required: forwarded as it is; the retry is the same call.
	p.send(modernCall("3", `{"confirm":true,"next":"c","text":"x"}`, "") + "\n")
	if l := p.readLine(); !strings.Contains(l, `"resultType":"input_required"`) || strings.Contains(l, "Also looked up") {
		t.Errorf("the input_required answer: %s", l)
	}
	p.send(modernCall("4", `{"confirm":true,"next":"c","text":"x"}`, `,"inputResponses":{"ok":{"action":"accept","content":{}}},"requestState":"st"`) + "\n")
	if item := lookedUp(t, p.readLine()); !strings.HasSuffix(item, "lookup {\"text\":\"c\"}:\n{\"text\":\"c\"}") {
		t.Errorf("after the retry's answer: appended %q", item)
	}
	if rest, code := p.finish(); code != 0 || rest != "" {
		t.Fatalf("exit %d, more output %q; stderr:\n%s", code, rest, p.stderr)
	}

	_, lines, _ := readLog(t, dir)
	var lookups int
	for _, l := range lines {
		if l.From == "proxy" && strings.Contains(string(l.Message), `"id":"hoist-`) {
			lookups++
			if !strings.Contains(string(l.Message), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
				t.Errorf("the proxy's lookup does not name its version: %s", l.Message)
			}
		}
	}
	if lookups != 2 {
		t.Errorf("%d lookups logged, want 2", lookups)
	}
	if _, runs := flowLog(t, dir); len(runs) != 2 {
		t.Errorf("%d runs, want 2: the input_required answer is not the call's", len(runs))
	}
}
