package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// waitSaid waits for the proxy to say a line on stderr containing want,
// and returns it.
func (h *host) waitSaid(t *testing.T, want string) string {
	t.Helper()
	for l := range h.errs {
		if strings.Contains(l, want) {
			return l
		}
		t.Log(l)
	}
	t.Fatalf("the proxy ended before saying %q", want)
	return ""
}

// findUser is the params of a tools/call of find_user_id_by_email.
func findUser(email string) string {
	return fmt.Sprintf(`{"name":"find_user_id_by_email","arguments":{"email":%q}}`, email)
}

// withID is a host line with its id replaced, to compare answers to the
// same call made under two ids.
func withID(line string, from, to int) string {
	return strings.Replace(line, fmt.Sprintf(`"id":%d`, from), fmt.Sprintf(`"id":%d`, to), 1)
}

// setBreakpoints types tools into the Holds page's form and waits for the
// proxy to say it holds at them.
func setBreakpoints(t *testing.T, ctx context.Context, h *host, tools string) {
	t.Helper()
	var ok bool
	within(t, ctx, "setting the breakpoints to "+tools,
		// In one script, so that no live update of the page comes between
		// typing and sending.
		eval(fmt.Sprintf(`(() => { const f = document.querySelector('form[action="/holds/breakpoints"]'); f.tools.value = %q; f.querySelector('button').click(); return true })()`, tools), &ok),
		visible(fmt.Sprintf(`input[name=tools][value=%q]`, tools)),
	)
	h.waitSaid(t, fmt.Sprintf("tools [%s]", tools))
}

// act clicks an action's button on held frame n, after typing value when
// it is not empty, and waits for the frame to leave the page.
func act(t *testing.T, ctx context.Context, n int, action, value string) {
	t.Helper()
	form := fmt.Sprintf(`form.held[data-n="%d"]`, n)
	var ok bool
	within(t, ctx, fmt.Sprintf("%s on frame %d", action, n),
		visible(form),
		// In one script, so that no live update of the page comes between
		// typing and clicking.
		eval(fmt.Sprintf(`(() => { const f = document.querySelector(%q); f.value.value = %q; f.querySelector('button[value=%s]').click(); return true })()`, form, value, action), &ok),
		waitCount(form, 0),
	)
}

// TestConsoleHoldsProxy holds a real hoist-mcp's frames in a real hoist
// console through the page (issue 15, point 3): the proxy in front of
// hoist-mcp-demo attaches with --console, a breakpoint on a tool holds its
// calls and their answers, and inject, continue and abort change exactly
// the frame they act on, as the host (the proxy's stdout) sees, and retry
// has the server answer again; the loop hold holds the third identical
// call and the error breakpoint an error's answer; a console that goes
// mid-hold releases the frame unchanged, and the proxy attaches again to
// the next.
func TestConsoleHoldsProxy(t *testing.T) {
	ctx := browser(t)
	logs := t.TempDir()
	addr, con := startConsoleProc(t, "--sessions", logs, "--poll", "50ms")
	base := "http://" + addr
	h := startHost(t, logs, "--console", addr)
	h.waitSaid(t, "console: attached to "+addr)
	within(t, ctx, "the proxy on the Holds page", chromedp.Navigate(base+"/holds"), visible(`section.proxy`))

	h.call(t, 0, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"holds","version":"0"}}`)
	fmt.Fprintln(h.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	plain1 := h.call(t, 1, "tools/call", findUser("c1@example.com"))
	plain3 := h.call(t, 3, "tools/call", findUser("c3@example.com"))
	if !strings.Contains(plain1, `"result"`) || plain1 == withID(plain3, 3, 1) {
		t.Fatalf("the demo's answers: %s and %s, want two different results", plain1, plain3)
	}

	setBreakpoints(t, ctx, h, "find_user_id_by_email")
	// Inject before the server: the host gets the value as the result.
	h.send(t, 2, "tools/call", findUser("c1@example.com"))
	act(t, ctx, 1, "inject", "user_injected")
	if got, want := h.await(t, 2), `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"user_injected"}]}}`; got != want {
		t.Errorf("inject: the host got %s, want %s", got, want)
	}
	// Continue the request and its answer: the server's answer, unchanged.
	h.send(t, 4, "tools/call", findUser("c3@example.com"))
	act(t, ctx, 2, "continue", "")
	within(t, ctx, "the answer held", visible(`form.held[data-n="3"]`))
	shoot(t, ctx, "holds-proxy")
	act(t, ctx, 3, "continue", "")
	if got := h.await(t, 4); got != withID(plain3, 3, 4) {
		t.Errorf("continue: the host got %s, want the server's answer %s", got, withID(plain3, 3, 4))
	}
	// Abort before the server: error -32099.
	h.send(t, 5, "tools/call", findUser("c5@example.com"))
	act(t, ctx, 4, "abort", "")
	if got, want := h.await(t, 5), `{"jsonrpc":"2.0","id":5,"error":{"code":-32099,"message":"aborted from the hoist console"}}`; got != want {
		t.Errorf("abort: the host got %s, want %s", got, want)
	}
	// Abort the answer, once the server has run the call.
	h.send(t, 6, "tools/call", findUser("c1@example.com"))
	act(t, ctx, 5, "continue", "")
	act(t, ctx, 6, "abort", "")
	if got, want := h.await(t, 6), `{"jsonrpc":"2.0","id":6,"error":{"code":-32099,"message":"aborted from the hoist console"}}`; got != want {
		t.Errorf("abort after: the host got %s, want %s", got, want)
	}

	// Retry the answer: the server runs the call again, and its new answer
	// is held in turn.
	h.send(t, 7, "tools/call", findUser("c3@example.com"))
	act(t, ctx, 7, "continue", "")
	act(t, ctx, 8, "retry", "")
	act(t, ctx, 9, "continue", "")
	if got := h.await(t, 7); got != withID(plain3, 3, 7) {
		t.Errorf("retry: the host got %s, want the server's answer %s", got, withID(plain3, 3, 7))
	}

	// The loop hold: no breakpoint, the third identical call is held.
	setBreakpoints(t, ctx, h, "")
	loop := findUser("c9@example.com")
	first := h.call(t, 10, "tools/call", loop)
	h.call(t, 11, "tools/call", `{"name":"find_user_id_by_email","arguments":{"email":"c9@example.com"},"_meta":{"progressToken":11}}`)
	h.send(t, 12, "tools/call", loop)
	var why string
	within(t, ctx, "the loop held", visible(`form.held[data-n="10"]`), eval(`document.querySelector('form.held[data-n="10"] .badge').textContent`, &why))
	if why != "loop" {
		t.Errorf("the third identical call is held for %q, want loop", why)
	}
	act(t, ctx, 10, "continue", "")
	if got := h.await(t, 12); got != withID(first, 10, 12) {
		t.Errorf("the loop's call continued: the host got %s, want %s", got, withID(first, 10, 12))
	}

	// The error breakpoint (on by default) holds an error's answer, and an
	// injected value replaces it.
	h.send(t, 13, "tools/call", `{"name":"no_such_tool","arguments":{}}`)
	within(t, ctx, "the error held", visible(`form.held[data-n="11"]`), eval(`document.querySelector('form.held[data-n="11"] .badge').textContent`, &why))
	if why != "error" {
		t.Errorf("the error's answer is held for %q, want error", why)
	}
	act(t, ctx, 11, "inject", `{"found":false}`)
	if got, want := h.await(t, 13), `{"jsonrpc":"2.0","id":13,"result":{"content":[{"type":"text","text":"{\"found\":false}"}],"structuredContent":{"found":false}}}`; got != want {
		t.Errorf("inject after: the host got %s, want %s", got, want)
	}

	// The console goes mid-hold: the frame goes on unchanged at once.
	setBreakpoints(t, ctx, h, "find_user_id_by_email")
	h.send(t, 20, "tools/call", findUser("c1@example.com"))
	within(t, ctx, "a frame held", visible(`form.held[data-n="12"]`))
	if err := con.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	con.Wait()
	h.waitSaid(t, "continued tools/call id=20 unchanged")
	if got := h.await(t, 20); got != withID(plain1, 1, 20) {
		t.Errorf("detached mid-hold: the host got %s, want the server's answer %s", got, withID(plain1, 1, 20))
	}
	// The proxy keeps trying: a console at the same address gets it back.
	startConsole(t, "--sessions", logs, "--poll", "50ms", "--addr", addr)
	h.waitSaid(t, "console: attached to "+addr)
	within(t, ctx, "the proxy back on the page", chromedp.Navigate(base+"/holds"), visible(`section.proxy`))

	// What the proxy sent in a frame's place is in the session log as its
	// own entry.
	h.in.Close()
	for range h.lines {
	}
	logsFound, _ := filepath.Glob(filepath.Join(logs, "*.jsonl"))
	var proxyLines []string
	for _, p := range logsFound {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"from":"proxy"`) {
				proxyLines = append(proxyLines, l)
			}
		}
	}
	if len(proxyLines) != 5 || !strings.Contains(proxyLines[0], "user_injected") || !strings.Contains(proxyLines[1], "-32099") ||
		!strings.Contains(proxyLines[2], "-32099") || !strings.Contains(proxyLines[3], `"id":7,"method":"tools/call"`) || !strings.Contains(proxyLines[4], "structuredContent") {
		t.Errorf("the session log's proxy entries: %q, want the injected answer, the two aborts, the retried request and the injected error's answer", proxyLines)
	}
}
