package proxy_test

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/oracletest"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// The judge's answers and the console's holds as events on the call's span
// (issue 29, point 1; docs/telemetry.md, "Events"), read back from a real
// Jaeger: the judge asks a fake model on loopback, the console is the
// built hoist console, and the events must sit on the span of the call
// they are about, not on a neighbour's.

// eventsNamed returns the span's events called name.
func eventsNamed(s jSpan, name string) []map[string]string {
	var out []map[string]string
	for _, e := range s.events() {
		if e["event"] == name {
			out = append(out, e)
		}
	}
	return out
}

// spanOf returns the only span called name whose request id is id.
func spanOf(t *testing.T, spans []jSpan, name, id string) jSpan {
	t.Helper()
	var out []jSpan
	for _, s := range named(spans, name) {
		if s.tag("jsonrpc.request.id") == id {
			out = append(out, s)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d spans %q with id %s in %+v", len(out), name, id, spans)
	}
	return out[0]
}

// TestOtelJudge: the confirmation judge's answer is an event on the span
// of the write it judged: the refused cancel's span carries the judgment
// that failed it (the rule, the model's p_yes, enforced, the refusal), the
// confirmed cancel's span the judgment that let it go, and neither the
// other's; the arguments stay out.
func TestOtelJudge(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-judge-" + t.Name()
	srv := oracletest.Start(t)
	tmp := t.TempDir()
	ctxFile, cache := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache")
	env := append([]string{"TYPESAFE_API_KEY=" + judgeKey}, j.env(service)...)
	p, journal, _, _ := openShop(t, env, append([]string{"--otel"}, judgeArgs(srv, ctxFile, cache, "enforce")...)...)
	do := func(line string) string { p.send(line); return p.readLine() }
	first, second := judgeSession(t, srv, ctxFile, do)
	if r := readResult(t, first); !r.Result.IsError || r.text() != judgeRefusal {
		t.Fatalf("the hesitant cancel got %s, want the judge's refusal", first)
	}
	if r := readResult(t, second); r.Result.IsError {
		t.Fatalf("the confirmed cancel got %s", second)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if n := strings.Count(strings.Join(servedCalls(t, journal), "\n"), "cancel_pending_order"); n != 1 {
		t.Fatalf("the shop cancelled %d times, want once", n)
	}

	// initialize, tools/list, the two reads and the two cancels.
	spans := j.spans(t, service, 6)
	refused := spanOf(t, spans, "tools/call cancel_pending_order", "5")
	went := spanOf(t, spans, "tools/call cancel_pending_order", "6")
	if refused.tag("error.type") != "tool_error" || went.tag("error.type") != "" {
		t.Errorf("error.type: refused %q, confirmed %q", refused.tag("error.type"), went.tag("error.type"))
	}
	no := eventsNamed(refused, "hoist.confirm.judgment")
	if len(no) != 1 {
		t.Fatalf("the refused cancel's events %v, want one hoist.confirm.judgment", refused.events())
	}
	for k, want := range map[string]string{
		"hoist.tool": "cancel_pending_order", "hoist.rule": "retail.confirmed", "hoist.id": "5",
		"hoist.failed": "true", "hoist.enforced": "true", "hoist.refusal": judgeRefusal,
	} {
		if no[0][k] != want {
			t.Errorf("the refusal's judgment: %s = %q, want %q (%v)", k, no[0][k], want, no[0])
		}
	}
	if a := no[0]["hoist.answers"]; !strings.Contains(a, `"p_yes":0.15`) || !strings.Contains(a, `"question":"confirm"`) {
		t.Errorf("the refusal's judgment: hoist.answers %s, want the model's p_yes 0.15 to confirm", a)
	}
	yes := eventsNamed(went, "hoist.confirm.judgment")
	if len(yes) != 1 {
		t.Fatalf("the confirmed cancel's events %v, want one hoist.confirm.judgment", went.events())
	}
	if yes[0]["hoist.failed"] != "false" || yes[0]["hoist.enforced"] != "false" || yes[0]["hoist.id"] != "6" ||
		!strings.Contains(yes[0]["hoist.answers"], `"p_yes":0.95`) || !strings.Contains(yes[0]["hoist.approval"], `"digest"`) {
		t.Errorf("the confirmed cancel's judgment %v", yes[0])
	}
	for _, e := range append(no, yes...) {
		if _, ok := e["hoist.arguments"]; ok {
			t.Errorf("the call's arguments are in its event: %v", e)
		}
	}
	for _, id := range []string{"3", "4"} {
		read := spanOf(t, spans, map[string]string{"3": "tools/call find_user_id_by_email", "4": "tools/call get_order_details"}[id], id)
		if e := eventsNamed(read, "hoist.confirm.judgment"); len(e) != 0 {
			t.Errorf("read %s carries a judgment: %v", id, e)
		}
	}
}

// consoleCSRF is the console's form token in a page it drew.
var consoleCSRF = regexp.MustCompile(`<input type="hidden" name="csrf" value="([^"]*)">`)

// realConsole is a built hoist console, driven as its Holds page's forms
// would drive it.
type realConsole struct {
	t          *testing.T
	base, csrf string
	c          *http.Client
	changes    <-chan struct{}
}

// startRealConsole starts hoist console and follows its changes (each
// frame held or gone is an event of /events).
func startRealConsole(t *testing.T) *realConsole {
	t.Helper()
	base, _ := testbin.StartConsole(t, "--sessions", t.TempDir(), "--poll", "50ms")
	rc := &realConsole{t: t, base: base, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	m := consoleCSRF.FindStringSubmatch(rc.get("/holds"))
	if m == nil {
		t.Fatal("the Holds page has no form token")
	}
	rc.csrf = m[1]
	rc.changes = testbin.ConsoleChanges(t, rc.c, base)
	return rc
}

func (rc *realConsole) get(path string) string {
	rc.t.Helper()
	resp, err := rc.c.Get(rc.base + path)
	if err != nil {
		rc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		rc.t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b)
}

// post sends a form of the console's own pages.
func (rc *realConsole) post(path string, form url.Values) {
	rc.t.Helper()
	form.Set("csrf", rc.csrf)
	req, _ := http.NewRequest("POST", rc.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", rc.base)
	resp, err := rc.c.Do(req)
	if err != nil {
		rc.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(resp.Header.Get("Location"), "err=") {
		rc.t.Fatalf("POST %s: %s %s %s", path, resp.Status, resp.Header.Get("Location"), b)
	}
}

// waitHeld waits, change by change, until the Holds page shows the frame
// numbered n.
func (rc *realConsole) waitHeld(n string) {
	rc.t.Helper()
	for {
		if strings.Contains(rc.get("/holds"), `data-n="`+n+`"`) {
			return
		}
		if _, ok := <-rc.changes; !ok {
			rc.t.Fatalf("the console's events ended before frame %s was held", n)
		}
	}
}

// TestOtelConsoleHold: a call a person holds in the console is one span
// with each hold (where, which method, why) and the person's decision on
// it as events, before the server and again before the host; the call
// next to it, not held, has none.
func TestOtelConsoleHold(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-console-" + t.Name()
	rc := startRealConsole(t)
	rc.post("/holds/breakpoints", url.Values{"tools": {"get_order_details"}})
	addr := strings.TrimPrefix(rc.base, "http://")
	// The breakpoints are set before the proxy attaches, and the host's
	// first line waits for the attachment, so they are in force from the
	// first call on.
	p, journal, _, _ := openShop(t, j.env(service), "--otel", "--console", addr, "--wait-for-attach")
	p.send(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	if r := readResult(t, p.readLine()); r.Result.IsError {
		t.Fatalf("the read was refused: %s", r.text())
	}
	p.send(toolCall(4, "get_order_details", `{"order_id":"#W7a"}`))
	rc.waitHeld("1")
	if n := len(servedCalls(t, journal)); n != 1 {
		t.Fatalf("the shop served %d calls while the second was held, want 1", n)
	}
	rc.post("/holds/verdict", url.Values{"proxy": {"1"}, "n": {"1"}, "action": {"continue"}})
	// Its answer is held in turn, before the host sees it.
	rc.waitHeld("2")
	rc.post("/holds/verdict", url.Values{"proxy": {"1"}, "n": {"2"}, "action": {"continue"}})
	if r := readResult(t, p.readLine()); r.Result.IsError || !strings.Contains(r.text(), "#W7a") {
		t.Fatalf("the held read, continued, got %s", r.text())
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}

	spans := j.spans(t, service, 4)
	held := spanOf(t, spans, "tools/call get_order_details", "4")
	var names []string
	for _, e := range held.events() {
		names = append(names, e["event"])
	}
	want := []map[string]string{
		{"event": "hoist.console.hold", "hoist.point": "before", "hoist.method": "tools/call", "hoist.why": "breakpoint"},
		{"event": "hoist.console.decision", "hoist.point": "before", "hoist.method": "tools/call", "hoist.why": "breakpoint", "hoist.action": "continue"},
		{"event": "hoist.console.hold", "hoist.point": "after", "hoist.method": "tools/call", "hoist.why": "breakpoint"},
		{"event": "hoist.console.decision", "hoist.point": "after", "hoist.method": "tools/call", "hoist.why": "breakpoint", "hoist.action": "continue"},
	}
	evs := held.events()
	if len(evs) != len(want) {
		t.Fatalf("the held call's events %v, want its hold and decision before the server, then after", names)
	}
	for i, w := range want {
		for k, v := range w {
			if evs[i][k] != v {
				t.Errorf("event %d: %s = %q, want %q (%v)", i, k, evs[i][k], v, evs[i])
			}
		}
		if _, ok := evs[i]["hoist.action"]; ok && w["hoist.action"] == "" {
			t.Errorf("event %d: a hold carries an action before anyone decided: %v", i, evs[i])
		}
	}
	free := spanOf(t, spans, "tools/call find_user_id_by_email", "3")
	if e := append(eventsNamed(free, "hoist.console.hold"), eventsNamed(free, "hoist.console.decision")...); len(e) != 0 {
		t.Errorf("the call not held carries console events: %v", e)
	}
}

// TestOtelLimit: a call a limit refused is a span with the guards log's
// limit line as its event (docs/limits.md), though no guards run and no
// log is kept on disk; the call the limit let through has none.
func TestOtelLimit(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	service := "hoist-limit-" + t.Name()
	p, journal, _, _ := openShop(t, j.env(service), "--otel", "--limit", "find_user_id_by_email=1/h")
	p.send(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	p.readLine()
	p.send(toolCall(4, "find_user_id_by_email", `{"email":"c8@example.com"}`))
	over := readResult(t, p.readLine())
	if !over.Result.IsError {
		t.Fatalf("the second call in the hour: %s", over.text())
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if n := len(servedCalls(t, journal)); n != 1 {
		t.Fatalf("the shop served %d calls, want 1", n)
	}
	spans := j.spans(t, service, 4)
	refused := spanOf(t, spans, "tools/call find_user_id_by_email", "4")
	evs := eventsNamed(refused, "hoist.guards.limit")
	if len(evs) != 1 || refused.tag("error.type") != "tool_error" {
		t.Fatalf("the refused call: error.type %q, events %v", refused.tag("error.type"), refused.events())
	}
	for k, want := range map[string]string{
		"hoist.tool": "find_user_id_by_email", "hoist.id": "4", "hoist.limit": "--limit find_user_id_by_email=1/h", "hoist.refusal": over.text(),
	} {
		if evs[0][k] != want {
			t.Errorf("the limit's event: %s = %q, want %q", k, evs[0][k], want)
		}
	}
	if f := evs[0]["hoist.frees"]; f == "" || !strings.Contains(over.text(), "at "+f) {
		t.Errorf("the limit's event frees %q; the agent was told %q", f, over.text())
	}
	if e := spanOf(t, spans, "tools/call find_user_id_by_email", "3").events(); len(e) != 0 {
		t.Errorf("the call let through carries events: %v", e)
	}
}
