package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	machine "github.com/hoist-mcp/hoist/active"
	"github.com/hoist-mcp/hoist/guards"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// The differential property of issue 23, point 1: for any host line, if a
// common decoder would see a guarded tool called with arguments A, the
// guards decided on A or the proxy refused the line. The decoders: Go's
// encoding/json into tagged structs (hoist-mcp-demo's, and most Go
// servers'), and JavaScript's JSON.parse (TestScreenAgreesWithJSONParse).

// diffWrites are the writes the property is checked for; diffFields the
// arguments it compares.
var (
	diffWrites = map[string]bool{"cancel_pending_order": true, "modify_pending_order_payment": true}
	diffFields = []string{"order_id", "reason", "payment_method_id"}
)

// goRequest, goCall and goArgs are how a Go server decodes a call.
type goRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type goCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type goArgs struct {
	OrderID         string `json:"order_id"`
	Reason          string `json:"reason"`
	PaymentMethodID string `json:"payment_method_id"`
}

// goSees returns the guarded write a Go server runs for line, and whether
// it runs one.
func goSees(line []byte) (tool string, args []string, ok bool) {
	var r goRequest
	if json.Unmarshal(line, &r) != nil || r.Method != "tools/call" || len(r.ID) == 0 || string(r.ID) == "null" {
		return "", nil, false
	}
	var c goCall
	if json.Unmarshal(r.Params, &c) != nil || !diffWrites[c.Name] {
		return "", nil, false
	}
	var a goArgs
	if len(c.Arguments) > 0 && json.Unmarshal(c.Arguments, &a) != nil {
		return "", nil, false
	}
	return c.Name, []string{a.OrderID, a.Reason, a.PaymentMethodID}, true
}

// screenOf is what the proxy decides on for line: refused, or the call
// the guards judge (held), as hostLine screens it (the retail writes
// include diffWrites).
func screenOf(line []byte) machine.Screened {
	return retailScreen().Screen(mcpmsg.ReadView(line))
}

var retailScreen = sync.OnceValue(func() *machine.Machine {
	m, err := machine.New(machine.Config{Guards: &machine.GuardsConfig{Domain: guards.Retail}})
	if err != nil {
		panic(err)
	}
	return m
})

// decidedArgs returns the guards' reading of the arguments they decided
// on, field by field ("" for a missing or non-string one, as a Go string
// field reads them), and nil for arguments that are not an object.
func decidedArgs(args []byte) map[string]any {
	if len(args) == 0 {
		return map[string]any{}
	}
	v, ok := jsontext.Parse(args)
	if !ok {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

func checkGoReading(t *testing.T, line []byte) {
	tool, want, ok := goSees(line)
	if !ok {
		return
	}
	sc := screenOf(line)
	if sc.Answer != nil || sc.Drop {
		return // refused
	}
	if !sc.Held || sc.Req.Call.Name != tool {
		t.Fatalf("encoding/json runs %s, and the proxy forwards it unjudged (held %v, %q)\nline: %q", tool, sc.Held, sc.Req.Call.Name, line)
	}
	got := decidedArgs(sc.Req.Call.Args)
	for i, f := range diffFields {
		s, _ := got[f].(string)
		if s != want[i] {
			t.Fatalf("encoding/json runs %s with %s %q, the guards decided on %q\nline: %q", tool, f, want[i], s, line)
		}
	}
}

// hostileLines are variants of one write, spelled so that decoders may
// read them differently: case, escapes, duplicates, nesting, lone
// surrogates, invalid UTF-8, NaN, batches.
func hostileLines() []string {
	const (
		other = `"#W3a"`
		mine  = `"#W4a"`
	)
	names := func(n string) []string {
		out := []string{n, strings.ToUpper(n), strings.ToUpper(n[:1]) + n[1:]}
		out = append(out, `\u00`+strings.ToLower(hexOf(n[0]))+n[1:])
		if i := strings.IndexAny(n, "sk"); i >= 0 {
			r := `\u017f`
			if n[i] == 'k' {
				r = `\u212a`
			}
			out = append(out, n[:i]+r+n[i+1:])
		}
		return out
	}
	var lines []string
	for _, idN := range names("id") {
		for _, methodN := range names("method") {
			for _, paramsN := range names("params") {
				lines = append(lines, `{"jsonrpc":"2.0","`+idN+`":5,"`+methodN+`":"tools/call","`+paramsN+`":{"name":"cancel_pending_order","arguments":{"order_id":`+mine+`,"reason":"no longer needed"}}}`)
			}
		}
	}
	for _, nameN := range names("name") {
		for _, argsN := range names("arguments") {
			for _, oidN := range names("order_id") {
				args := `{"` + oidN + `":` + mine + `,"reason":"no longer needed"}`
				p := `"` + nameN + `":"cancel_pending_order","` + argsN + `":` + args
				lines = append(lines,
					`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{`+p+`}}`,
					`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_order_details","arguments":{},`+p+`}}`,
					`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{`+p+`,"name":"get_order_details","arguments":{}}}`,
					`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":`+other+`,"`+oidN+`":`+mine+`,"reason":"no longer needed"}}}`,
					`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"`+oidN+`":`+mine+`,"order_id":`+other+`,"reason":"no longer needed"}}}`,
					`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{`+p+`}}]`,
					`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"params":{`+p+`},`+p+`}}`,
				)
			}
		}
	}
	for _, v := range []string{`"#W4a\ud800"`, `"#W\u00344a"`, `"\ud83d\ude00"`, `"#W4a\udc00\ud800"`} {
		lines = append(lines, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":`+v+`,"reason":"no longer needed"}}}`)
	}
	lines = append(lines,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a","reason":"no longer needed"}},"x":"`+"\xff"+`"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a`+"\xff"+`","reason":"no longer needed"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a","reason":"no longer needed","n":NaN}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call\ud800","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order\udfff","arguments":{"order_id":"#W4a"}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a"}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W4a"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":null}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":null,"reason":5}}}`,
	)
	return lines
}

func hexOf(c byte) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[c>>4], digits[c&15]})
}

func TestScreenAgreesWithEncodingJSON(t *testing.T) {
	for _, l := range hostileLines() {
		checkGoReading(t, []byte(l))
	}
}

// FuzzScreenAgreesWithEncodingJSON is the property against encoding/json
// for any line (CI runs it for 30 s).
func FuzzScreenAgreesWithEncodingJSON(f *testing.F) {
	for _, l := range hostileLines() {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkGoReading(t, line) })
}

// jsReader reads base64 lines on stdin, decodes each as Node's stdio
// readers do (UTF-8, invalid bytes as U+FFFD) and JSON.parse; it writes,
// per line, what a JavaScript server runs: null, or [tool, the arguments'
// fields as UTF-16 code units (null for a missing or non-string one)].
const jsReader = `
const writes = new Set(JSON.parse(process.argv[1]));
const fields = JSON.parse(process.argv[2]);
const units = s => Array.from({length: s.length}, (_, i) => s.charCodeAt(i));
let input = '';
process.stdin.on('data', d => input += d);
process.stdin.on('end', () => {
  const out = [];
  for (const b64 of input.split('\n').filter(Boolean)) {
    let sees = null;
    try {
      const m = JSON.parse(Buffer.from(b64, 'base64').toString('utf8'));
      const p = m && m.params;
      if (m && !Array.isArray(m) && m.method === 'tools/call' && m.id !== undefined && m.id !== null &&
          p && typeof p === 'object' && writes.has(p.name)) {
        const a = p.arguments && typeof p.arguments === 'object' ? p.arguments : {};
        sees = [p.name, fields.map(f => typeof a[f] === 'string' ? units(a[f]) : null)];
      }
    } catch (e) {}
    out.push(sees);
  }
  process.stdout.write(JSON.stringify(out));
});`

// TestScreenAgreesWithJSONParse feeds the hostile variants through one
// node process: whenever JSON.parse would see a guarded write called with
// arguments A, the guards decided on A or the proxy refused the line.
func TestScreenAgreesWithJSONParse(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("HOIST_REQUIRE_PEERS") != "" {
			t.Fatal("node not found on PATH, and HOIST_REQUIRE_PEERS is set")
		}
		t.Skip("node not found on PATH: JSON.parse's reading is not checked (set HOIST_REQUIRE_PEERS to make it required)")
	}
	lines := hostileLines()
	var in bytes.Buffer
	for _, l := range lines {
		in.WriteString(base64.StdEncoding.EncodeToString([]byte(l)) + "\n")
	}
	writes, _ := json.Marshal([]string{"cancel_pending_order", "modify_pending_order_payment"})
	fields, _ := json.Marshal(diffFields)
	cmd := exec.Command("node", "-e", jsReader, string(writes), string(fields))
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var sees []*[2]json.RawMessage
	if err := json.Unmarshal(out, &sees); err != nil || len(sees) != len(lines) {
		t.Fatalf("node's answer (%d for %d lines): %v", len(sees), len(lines), err)
	}
	ran := 0
	for i, s := range sees {
		if s == nil {
			continue
		}
		ran++
		var tool string
		var args []*[]uint16
		json.Unmarshal(s[0], &tool)
		json.Unmarshal(s[1], &args)
		sc := screenOf([]byte(lines[i]))
		if sc.Answer != nil || sc.Drop {
			continue
		}
		if !sc.Held || sc.Req.Call.Name != tool {
			t.Errorf("JSON.parse runs %s, and the proxy forwards it unjudged\nline: %q", tool, lines[i])
			continue
		}
		got := decidedArgs(sc.Req.Call.Args)
		for j, f := range diffFields {
			s, isStr := got[f].(string)
			switch {
			case args[j] == nil && isStr:
				t.Errorf("JSON.parse runs %s without a string %s, the guards decided on %q\nline: %q", tool, f, s, lines[i])
			case args[j] != nil && (!isStr || !equalUnits(*args[j], s)):
				t.Errorf("JSON.parse runs %s with %s %v, the guards decided on %q\nline: %q", tool, f, *args[j], s, lines[i])
			}
		}
	}
	if ran == 0 {
		t.Fatal("JSON.parse ran no write of the corpus: the test checks nothing")
	}
	t.Logf("%d hostile lines, %d of which JSON.parse runs as a guarded write", len(lines), ran)
}

func equalUnits(u []uint16, s string) bool {
	e := utf16.Encode([]rune(s))
	if len(e) != len(u) {
		return false
	}
	for i := range e {
		if e[i] != u[i] {
			return false
		}
	}
	return true
}
