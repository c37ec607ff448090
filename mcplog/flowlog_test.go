package mcplog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// flowLogLines returns the lines of the flow logs in testdata, which
// hoist-mcp --flow wrote.
func flowLogLines(t testing.TB) [][]byte {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "sessions", "flow", "*.flow.jsonl"))
	if len(paths) == 0 {
		t.Fatal("no flow logs in testdata/sessions/flow")
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Split(bytes.TrimSpace(b), []byte("\n"))...)
	}
	return out
}

// The types read what the proxy wrote and marshal back to the same bytes:
// the format is exactly as it was, so existing logs read the same and the
// proxy writes the same lines.
func TestFlowLinesMarshalAsLogged(t *testing.T) {
	decisions, runs := 0, 0
	for _, line := range flowLogLines(t) {
		l, err := ParseFlowLine(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		switch {
		case l.Decision != nil:
			decisions++
			asLogged(t, line, *l.Decision)
		case l.Run != nil:
			runs++
			asLogged(t, line, *l.Run)
		default:
			t.Fatalf("%s: neither a decision nor a run", line)
		}
	}
	if decisions != 14 || runs != 8 {
		t.Errorf("%d decisions and %d runs, want 14 and 8", decisions, runs)
	}
}

// asLogged checks that json.Unmarshal reads line as ParseFlowLine did (as
// parsed), and that it marshals back to line byte for byte.
func asLogged[T any](t *testing.T, line []byte, parsed T) {
	t.Helper()
	var v T
	if err := json.Unmarshal(line, &v); err != nil || !cmp.Equal(v, parsed) {
		t.Errorf("json.Unmarshal reads another line than ParseFlowLine: %v\n%s", err, cmp.Diff(parsed, v))
	}
	back, err := json.Marshal(parsed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, line) {
		t.Errorf("marshalled again:\n got %s\nwant %s", back, line)
	}
}

func TestFlowLineAccessors(t *testing.T) {
	line := []byte(`{"type":"decision","site":"decide#0","offers":[` +
		`{"tool":"get_order","args":{"id":"#W1"},"binding":{"id":"$result.orders[*]"},"from":"get_user","p_reach":0.5,"p_habit":0.25,"p_binding":0.8,"support":4},` +
		`{"tool":"get_user","args":{},"p_reach":1,"p_habit":1,"p_binding":1}],` +
		`"greedy":1,"taken":0,"propensity":0.1,"rule":{"decider":"habit","threshold":0.3,"epsilon":0.2},"shadow":true,"reason":"r"}`)
	l, err := ParseFlowLine(line)
	if err != nil {
		t.Fatal(err)
	}
	d := l.Decision
	o := d.Offers[0]
	if o.Label() != `get_order {"id":"#W1"}` || d.Value() != o.Label() || d.TakenOffer() != &d.Offers[0] {
		t.Errorf("label %q, value %q", o.Label(), d.Value())
	}
	if o.PTool(DeciderHabit) != 0.25 || o.PTool(DeciderReach) != 0.5 || o.Score(DeciderHabit) != 0.25*0.8 || o.Binding["id"] != "$result.orders[*]" {
		t.Errorf("offer: %+v", o)
	}
	if d.Rule != (FlowRule{Decider: DeciderHabit, Threshold: 0.3, Epsilon: 0.2}) || !d.Shadow || d.Reason != "r" || d.Greedy != 1 {
		t.Errorf("decision: %+v", d)
	}
	d.Taken = -1
	if d.Value() != Stop || d.TakenOffer() != nil {
		t.Errorf("a stop's value: %q", d.Value())
	}

	l, err = ParseFlowLine([]byte(`{"type":"run","call":"get_user","failed":true,"max_lookups":8,"fold":2,"rule":{"decider":"reach","threshold":0.3,"epsilon":0},` +
		`"sites":[["decide#0","get_order {}",-0.5],["obs#0","error",-2],["decide#1","stop",null]],"surprise":2}`))
	if err != nil {
		t.Fatal(err)
	}
	r := l.Run
	if r.Call != "get_user" || !r.Failed || r.MaxLookups != 8 || r.Fold != 2 || r.Surprise != 2 || r.Shadow {
		t.Errorf("run: %+v", r)
	}
	if n, a := r.Counts(); n != 2 || a != 1 {
		t.Errorf("counts %d decisions %d answers", n, a)
	}
	if lp := r.LogPolicy(); !math.IsInf(lp, -1) {
		t.Errorf("log policy with an impossible decision: %v", lp)
	}
	r.Sites[2].LogP = 0
	if lp := r.LogPolicy(); lp != -0.5 {
		t.Errorf("log policy %v, want -0.5", lp)
	}
}

func TestFlowSiteJSON(t *testing.T) {
	b, err := json.Marshal([]FlowSite{{"decide#0", "stop", math.Inf(-1)}, {"obs#0", "ok", -0.25}})
	if err != nil || string(b) != `[["decide#0","stop",null],["obs#0","ok",-0.25]]` {
		t.Errorf("marshal: %s, %v", b, err)
	}
	var back []FlowSite
	if err := json.Unmarshal(b, &back); err != nil || !math.IsInf(back[0].LogP, -1) || back[1] != (FlowSite{"obs#0", "ok", -0.25}) {
		t.Errorf("unmarshal: %+v, %v", back, err)
	}
	if _, err := json.Marshal(FlowSite{"obs#0", "ok", math.NaN()}); err == nil {
		t.Error("a NaN logp marshalled")
	}
}

func TestParseFlowLineErrors(t *testing.T) {
	const rule = `"rule":{"decider":"reach","threshold":0.3,"epsilon":0}`
	for _, c := range []struct{ line, want string }{
		{`not json`, "not a JSON object"},
		{`[1,2]`, "not a JSON object"},
		{`{"type":"verdict"}`, `type: want "decision", "run" or "off", got "verdict"`},
		{`{"site":"decide#0"}`, `type: want "decision", "run" or "off", got ""`},
		{`{"type":"decision","offers":[],"greedy":-1,"taken":-1}`, "site: missing"},
		{`{"type":"decision","site":"decide#0","offers":[],"greedy":"zero","taken":-1}`, "greedy: want an integer, got a JSON string"},
		{`{"type":"decision","site":"decide#0","offers":[],"greedy":0.5,"taken":-1}`, "greedy: want an integer, got 0.5"},
		{`{"type":"decision","site":"decide#0","offers":[],"taken":-1}`, "greedy: want -1 or an index into 0 offers"},
		{`{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":3}`, "taken: want -1 or an index into 0 offers"},
		{`{"type":"decision","site":"decide#0","offers":{},"greedy":-1,"taken":-1}`, "offers: want an array, got a JSON object"},
		{`{"type":"decision","site":"decide#0","offers":[{"tool":"a"},{"tool":1}],"greedy":0,"taken":0}`, "offers[1].tool: want a string, got a JSON number"},
		{`{"type":"decision","site":"decide#0","offers":[{"tool":"a","binding":{"id":3}}],"greedy":0,"taken":0}`, "offers[0].binding.id: want a string, got a JSON number"},
		{`{"type":"decision","site":"decide#0","offers":[{"tool":"a","p_reach":"1"}],"greedy":0,"taken":0}`, "offers[0].p_reach: want a number, got a JSON string"},
		{`{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":-1,"rule":{"threshold":"x"}}`, "rule.threshold: want a number, got a JSON string"},
		{`{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":-1,"shadow":1}`, "shadow: want a boolean, got a JSON number"},
		{`{"type":"run","sites":[["decide#0","stop"]],` + rule + `}`, "sites[0]: want [address, value, logp], got a JSON array"},
		{`{"type":"run","sites":[["decide#0","stop","x"]]}`, "sites[0].logp: want a number, got a JSON string"},
		{`{"type":"run","sites":[["decide#0",7,0]]}`, "sites[0].value: want a string, got a JSON number"},
		{`{"type":"run","max_lookups":"8"}`, "max_lookups: want an integer, got a JSON string"},
		{`{"type":"run","Sites":[1]}`, ""}, // names are exact: "Sites" is not "sites", and is left alone
	} {
		_, err := ParseFlowLine([]byte(c.line))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.line, err)
			}
			continue
		}
		var ie *InputError
		if !errors.As(err, &ie) || ie.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.line, err, c.want)
		}
	}
}

// The reader reports a bad line with its file and line and reads on; a
// torn last line ends the log quietly, whole JSON or not; a last line
// without its newline that is whole and a flow line is read.
func TestFlowReader(t *testing.T) {
	const (
		dec = `{"type":"decision","site":"decide#0","offers":[],"greedy":-1,"taken":-1,"propensity":1}`
		run = `{"type":"run","call":"get","sites":[["decide#0","stop",0]]}`
	)
	for _, c := range []struct {
		name, log string
		want      []string // "line: decision|run" or the error
		torn      bool
		lines     int
	}{
		{"clean", dec + "\n" + run + "\n", []string{"1 decision", "2 run"}, false, 2},
		{"blank and CRLF lines", dec + "\r\n\n" + run + "\r\n", []string{"1 decision", "3 run"}, false, 3},
		{"a bad line in the middle", dec + "\n" + `{"type":"decision"}` + "\n" + run + "\n",
			[]string{"1 decision", "f.jsonl:2: site: missing", "3 run"}, false, 3},
		{"a torn last line", dec + "\n" + run + "\n" + `{"type":"decision","site":"dec`, []string{"1 decision", "2 run"}, true, 3},
		{"a whole last line without its newline", dec + "\n" + run, []string{"1 decision", "2 run"}, false, 2},
		{"a whole but bad last line without its newline is torn", dec + "\n" + `{"type":"run","fold":"x"}`, []string{"1 decision"}, true, 2},
		{"a whole but bad last line", dec + "\n" + `{"type":"run","fold":"x"}` + "\n", []string{"1 decision", "f.jsonl:2: fold: want an integer, got a JSON string"}, false, 2},
		{"empty", "", nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewFlowReader(strings.NewReader(c.log), "f.jsonl")
			var got []string
			for {
				l, err := r.Next()
				if err == io.EOF {
					break
				}
				switch {
				case err != nil:
					got = append(got, err.Error())
				case l.Decision != nil:
					got = append(got, itoa(l.Line)+" decision")
					if !bytes.Equal(l.Raw, []byte(dec)) {
						t.Errorf("raw %q", l.Raw)
					}
				case l.Run != nil:
					got = append(got, itoa(l.Line)+" run")
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if r.Torn() != c.torn || r.Lines() != c.lines {
				t.Errorf("torn %v, lines %d; want %v, %d", r.Torn(), r.Lines(), c.torn, c.lines)
			}
		})
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// FuzzParseFlowLine: no line makes the parser panic; what it accepts is
// consistent (a decision's greedy and taken index its offers) and survives
// being written and read again.
func FuzzParseFlowLine(f *testing.F) {
	for _, l := range flowLogLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"type":"run","sites":[["decide#0","stop",null],["obs#0","ok",-1]]}`))
	f.Add([]byte(`{"type":"decision","site":"x","offers":[{"tool":1}],"greedy":0,"taken":0}`))
	f.Add([]byte(`{"type":"decision","site":"x","offers":[{"tool":"a","binding":{"b":"$text"}}],"greedy":0,"taken":0,"type":"decision"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := ParseFlowLine(line)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || l.Decision != nil || l.Run != nil {
				t.Fatalf("error %v (%T) with a line %+v", err, err, l)
			}
			return
		}
		var v any
		switch {
		case l.Decision != nil && l.Run == nil:
			d := l.Decision
			if d.Taken < -1 || d.Taken >= len(d.Offers) || d.Greedy < -1 || d.Greedy >= len(d.Offers) || d.Site == "" {
				t.Fatalf("decision out of its offers: %+v", d)
			}
			v = d
		case l.Run != nil && l.Decision == nil:
			v = l.Run
		default:
			t.Fatalf("not one of a decision and a run: %+v", l)
		}
		once, err := json.Marshal(v)
		if err != nil {
			return // a logp of +Inf or NaN cannot be read; anything else can be written
		}
		again, err := ParseFlowLine(once)
		if err != nil {
			t.Fatalf("%s, written as %s, reads back as %v", line, once, err)
		}
		var w any = again.Decision
		if again.Run != nil {
			w = again.Run
		}
		twice, _ := json.Marshal(w)
		if !bytes.Equal(once, twice) {
			t.Fatalf("written twice differs:\n%s\n%s", once, twice)
		}
	})
}

// json.Unmarshal of null leaves a line as it was, as encoding/json does for
// any value; of another kind, it is an error naming what was wanted.
func TestFlowLineUnmarshalNullAndKinds(t *testing.T) {
	d := FlowDecision{Site: "decide#3"}
	r := FlowRun{Call: "get"}
	s := FlowSite{Address: "obs#0"}
	for _, v := range []any{&d, &r, &s} {
		if err := json.Unmarshal([]byte("null"), v); err != nil {
			t.Errorf("%T of null: %v", v, err)
		}
	}
	if d.Site != "decide#3" || r.Call != "get" || s.Address != "obs#0" {
		t.Errorf("null changed them: %+v %+v %+v", d, r, s)
	}
	if err := json.Unmarshal([]byte(`[1]`), &d); err == nil || err.Error() != "want an object, got a JSON array" {
		t.Errorf("a decision of an array: %v", err)
	}
}

func TestParseFlowOff(t *testing.T) {
	l, err := ParseFlowLine([]byte(`{"type":"off","server":"fs","flow_servers":["demo"],"reason":"add --server-name demo"}`))
	if err != nil || l.Off == nil || l.Off.Server != "fs" || len(l.Off.FlowServers) != 1 || l.Off.Reason != "add --server-name demo" || l.Decision != nil || l.Run != nil {
		t.Errorf("ParseFlowLine(off) = %+v, %v", l, err)
	}
	var ie *InputError
	if _, err := ParseFlowLine([]byte(`{"type":"off","server":7}`)); !errors.As(err, &ie) || ie.Field != "server" {
		t.Errorf("bad off line: %v", err)
	}
}

// An offer's System-One answer reads back as it was written: a P(yes) of
// 0 is an answer, distinct from none, and a line of a version that asked
// no question reads with none.
func TestFlowOfferOracleFields(t *testing.T) {
	zero := 0.0
	for _, o := range []FlowOffer{
		{Tool: "get", Args: json.RawMessage(`{}`), POracle: &zero, OracleKey: strings.Repeat("a", 64), OracleCached: true},
		{Tool: "get", Args: json.RawMessage(`{}`), OracleKey: strings.Repeat("b", 64), OracleWhy: "spent"},
		{Tool: "get", Args: json.RawMessage(`{}`)},
	} {
		d := FlowDecision{Type: TypeDecision, Site: "decide#0", Offers: []FlowOffer{o}, Greedy: -1, Taken: -1}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back FlowDecision
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if diff := cmp.Diff(o, back.Offers[0]); diff != "" {
			t.Errorf("%s read back (-want +got):\n%s", b, diff)
		}
		if o.OracleKey == "" && bytes.Contains(b, []byte("oracle")) {
			t.Errorf("an offer without a question writes %s", b)
		}
	}
}
