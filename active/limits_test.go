package active

import (
	"strings"
	"testing"
	"time"
)

// limitDriver is a Machine with --limit and --max-calls whose clock stands
// still until the test moves it: the limits read the Machine's clock, so
// no test of theirs sleeps.
func limitDriver(t *testing.T, c Config, specs ...string) (*driver, *time.Time) {
	t.Helper()
	if c.Limits == nil {
		c.Limits = &LimitsConfig{}
	}
	for _, s := range specs {
		l, err := ParseLimit(s)
		if err != nil {
			t.Fatal(err)
		}
		c.Limits.Rules = append(c.Limits.Rules, l)
	}
	d := newDriver(t, c)
	clock := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	d.m.now = func() time.Time { return clock }
	return d, &clock
}

// sent reports whether the host's call went on to the server (not taken,
// no answer of the proxy's), and otherwise returns the proxy's answer.
func (d *driver) sent(line string) (bool, string) {
	d.t.Helper()
	taken, acts := d.host(line)
	if !taken {
		if hs := only[ToHost](acts); len(hs) > 0 {
			d.t.Fatalf("a call that goes on was answered too: %s", describe(acts))
		}
		return true, ""
	}
	return false, string(one[ToHost](d.t, acts).Line)
}

func TestLimitPerTool(t *testing.T) {
	d, clock := limitDriver(t, Config{}, "lookup=2/1m")
	for i, id := range []string{"1", "2"} {
		if ok, ans := d.sent(call(id, "lookup", `{}`)); !ok {
			t.Fatalf("call %d refused within the limit: %s", i+1, ans)
		}
	}
	ok, ans := d.sent(call("3", "lookup", `{}`))
	if ok {
		t.Fatal("the third lookup within the minute went on to the server")
	}
	for _, want := range []string{`"id":3`, `"isError":true`, "--limit lookup=2/1m", "frees a call in 30s", "10:00:30.000Z", "not sent to the MCP server"} {
		if !strings.Contains(ans, want) {
			t.Errorf("refusal %s: want %q", ans, want)
		}
	}
	if ok, _ := d.sent(call("4", "update", `{}`)); !ok {
		t.Error("update was refused by lookup's limit")
	}
	*clock = clock.Add(29 * time.Second)
	if ok, ans := d.sent(call("5", "lookup", `{}`)); ok || !strings.Contains(ans, "frees a call in 1s") {
		t.Fatalf("29s later: want refused, freeing in 1s; got sent=%v %s", ok, ans)
	}
	*clock = clock.Add(time.Second)
	if ok, ans := d.sent(call("6", "lookup", `{}`)); !ok {
		t.Fatalf("30s later one call is free: %s", ans)
	}
	if ok, _ := d.sent(call("7", "lookup", `{}`)); ok {
		t.Fatal("and only one")
	}
}

func TestLimitEveryToolAndBudget(t *testing.T) {
	d, clock := limitDriver(t, Config{Limits: &LimitsConfig{MaxCalls: 4}}, "*=3/10s")
	for _, c := range []string{call("1", "lookup", `{}`), call("2", "update", `{}`), call("3", "other", `{}`)} {
		if ok, ans := d.sent(c); !ok {
			t.Fatalf("refused within '*=3/10s': %s", ans)
		}
	}
	if ok, ans := d.sent(call("4", "lookup", `{}`)); ok || !strings.Contains(ans, "calls of any tool") {
		t.Fatalf("the fourth call of any tool: want refused by *, got sent=%v %s", ok, ans)
	}
	*clock = clock.Add(time.Hour)
	if ok, ans := d.sent(call("5", "lookup", `{}`)); !ok {
		t.Fatalf("an hour later: %s", ans)
	}
	ok, ans := d.sent(call("6", "lookup", `{}`))
	if ok || !strings.Contains(ans, "--max-calls 4") {
		t.Fatalf("the fifth call sent: want refused by the budget of 4, got sent=%v %s", ok, ans)
	}
}

// TestLimitReadsTheNameAsTheServerDoes: a call whose name is escaped is
// the same tool to the server, and to the limit; a params member "Name"
// that a lenient server reads as the name is refused before any limit
// could be dodged by it.
func TestLimitReadsTheNameAsTheServerDoes(t *testing.T) {
	d, _ := limitDriver(t, Config{}, "lookup=1/h")
	if ok, _ := d.sent(call("1", "lookup", `{}`)); !ok {
		t.Fatal("the first lookup was refused")
	}
	for _, line := range []string{
		call("2", `look\u0075p`, `{}`),
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"Name":"lookup","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"other","name":"lookup","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"other","NAME":"lookup","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools\/call","params":{"name":"lookup","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":7,"Method":"tools/call","params":{"name":"lookup","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","Params":{"name":"lookup","arguments":{}}}`,
	} {
		if ok, _ := d.sent(line); ok {
			t.Errorf("%s went on to the server past lookup=1/h", line)
		}
	}
}

// TestLimitBatchCountsNothingItDoesNotSend: a batch refused whole gives its
// calls back to the limits.
func TestLimitBatchCountsNothingItDoesNotSend(t *testing.T) {
	d, _ := limitDriver(t, Config{}, "lookup=2/h")
	held, taken, acts := d.heldBatch(`[` + call("1", "lookup", `{}`) + `,` + call("2", "lookup", `{}`) + `,` + call("3", "lookup", `{}`) + `]`)
	if !held || !taken {
		t.Fatal("a batch of three lookups went on past lookup=2/h")
	}
	ans := string(one[ToHost](t, acts).Line)
	if !strings.Contains(ans, "--limit lookup=2/h") || strings.Count(ans, "Not run") != 2 {
		t.Fatalf("batch answer %s: want the third refused by the limit, the others not sent", ans)
	}
	for _, id := range []string{"4", "5"} {
		if ok, ans := d.sent(call(id, "lookup", `{}`)); !ok {
			t.Fatalf("after the refused batch, lookup %s: %s", id, ans)
		}
	}
}

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Limit
		err  string
	}{
		{in: "lookup=10/m", want: Limit{Tool: "lookup", N: 10, Per: time.Minute}},
		{in: "*=100/h", want: Limit{Tool: "*", N: 100, Per: time.Hour}},
		{in: "get_order=3/10s", want: Limit{Tool: "get_order", N: 3, Per: 10 * time.Second}},
		{in: "x=1/1m30s", want: Limit{Tool: "x", N: 1, Per: 90 * time.Second}},
		{in: "lookup", err: "want TOOL=N/PERIOD"},
		{in: "=3/s", err: "want TOOL=N/PERIOD"},
		{in: "lookup=0/s", err: "at least 1"},
		{in: "lookup=x/s", err: "at least 1"},
		{in: "lookup=3/week", err: "PERIOD must be"},
		{in: "lookup=3/-1s", err: "PERIOD must be"},
	} {
		got, err := ParseLimit(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("ParseLimit(%q) = %v; want an error naming the value and %q", tc.in, err, tc.err)
			}
			continue
		}
		tc.want.Spec = tc.in
		if err != nil || got != tc.want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestLimitLogged: a refusal is a guards log line (type limit) when the
// guards log is kept, for a batch's call as for a single one, with the
// limit and when it frees; the budget's frees never. Without the log,
// nothing is logged.
func TestLimitLogged(t *testing.T) {
	d, _ := limitDriver(t, Config{GuardsLog: true, Limits: &LimitsConfig{MaxCalls: 2}}, "lookup=1/1m")
	d.sent(call("1", "lookup", `{}`))
	_, acts := d.host(call("2", "lookup", `{}`))
	logs := only[Log](acts)
	want := `{"type":"limit","id":2,"tool":"lookup","limit":"--limit lookup=1/1m","frees":"2026-12-04T10:01:00.000Z","refusal":"Refused by hoist-mcp's limit --limit lookup=1/1m`
	if len(logs) != 1 || logs[0].To != GuardsLog || !strings.HasPrefix(string(logs[0].Line), want) {
		t.Fatalf("the refusal's log: %s\nwant a guards log line starting %s", describe(acts), want)
	}
	d.sent(call("3", "update", `{}`))
	_, _, acts = d.heldBatch(`[` + call("4", "update", `{}`) + `]`)
	logs = only[Log](acts)
	if len(logs) != 1 || !strings.HasPrefix(string(logs[0].Line), `{"type":"limit","id":4,"tool":"update","limit":"--max-calls 2","refusal":`) {
		t.Fatalf("the batch's refusal: %s", describe(acts))
	}

	quiet, _ := limitDriver(t, Config{}, "lookup=1/1m")
	quiet.sent(call("1", "lookup", `{}`))
	if _, acts := quiet.host(call("2", "lookup", `{}`)); len(only[Log](acts)) != 0 {
		t.Errorf("logged without a guards log: %s", describe(acts))
	}
}
