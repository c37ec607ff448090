package console_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// csrfField finds the console's token for forms in a page it drew.
var csrfField = regexp.MustCompile(`<input type="hidden" name="csrf" value="([^"]*)">`)

// consoleClient talks to a console at base as a script would, following
// no redirect, so that a post's own answer is what the test sees.
type consoleClient struct {
	base string
	c    *http.Client
}

func newConsoleClient(addr string) *consoleClient {
	return &consoleClient{base: "http://" + addr, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (cc *consoleClient) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := cc.c.Get(cc.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
	}
	return string(b)
}

// post sends form to path with the headers given and returns the status
// and the answer's body.
func (cc *consoleClient) post(t *testing.T, path string, form url.Values, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", cc.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := cc.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// events follows the console's server-sent events: each change the
// console publishes (a frame held or gone) is one value on the channel.
func (cc *consoleClient) events(t *testing.T) <-chan struct{} {
	t.Helper()
	return testbin.ConsoleChanges(t, cc.c, cc.base)
}

// waitHolds waits, event by event, until the Holds page shows want.
func (cc *consoleClient) waitHolds(t *testing.T, ev <-chan struct{}, want string) string {
	t.Helper()
	for {
		if page := cc.get(t, "/holds"); strings.Contains(page, want) {
			return page
		}
		if _, ok := <-ev; !ok {
			t.Fatalf("the console's events ended before the Holds page showed %s", want)
		}
	}
}

// A page the user visits cannot decide a held frame (issue 25, point 4):
// a real hoist-mcp in front of the demo holds a call in a real console,
// and verdicts that continue it, sent as another site's page would send
// them (its Origin, or only its Referer or Sec-Fetch-Site) or without the
// console's form token, are refused; the console's own form, with its
// token, then aborts the frame, and the host gets the abort: no refused
// verdict reached the proxy, and the call never reached the server.
func TestConsoleRefusesForeignVerdicts(t *testing.T) {
	logs := t.TempDir()
	addr := startConsole(t, "--sessions", logs, "--poll", "50ms")
	cc := newConsoleClient(addr)
	ev := cc.events(t)
	h := startHost(t, logs, "--console", addr)
	h.waitSaid(t, "console: attached to "+addr)
	h.call(t, 0, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"csrf","version":"0"}}`)

	page := cc.get(t, "/holds")
	tok := strings.Repeat("a", 32) // what is refused without the page's token
	if m := csrfField.FindStringSubmatch(page); m == nil || len(m[1]) < 32 {
		t.Errorf("the Holds page's forms carry no token of 32 characters or more: %q", m)
	} else {
		tok = m[1]
	}
	self := "http://" + addr
	same := map[string]string{"Origin": self}

	// A foreign page cannot set breakpoints either.
	bp := url.Values{"tools": {"find_user_id_by_email"}, "loop": {"1"}, "errors": {"1"}}
	if code, body := cc.post(t, "/holds/breakpoints", bp, same); code != http.StatusForbidden {
		t.Errorf("breakpoints without the token: %d %s, want 403", code, body)
	}
	bp.Set("csrf", tok)
	if code, body := cc.post(t, "/holds/breakpoints", bp, same); code != http.StatusSeeOther {
		t.Fatalf("breakpoints from the console's own form: %d %s, want 303", code, body)
	}
	h.waitSaid(t, "tools [find_user_id_by_email]")

	h.send(t, 2, "tools/call", findUser("c1@example.com"))
	cc.waitHolds(t, ev, `data-n="1"`)

	cont := func(token string) url.Values {
		v := url.Values{"proxy": {"1"}, "n": {"1"}, "action": {"continue"}}
		if token != "" {
			v.Set("csrf", token)
		}
		return v
	}
	refused := []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"another loopback origin, with the token", cont(tok), map[string]string{"Origin": "http://127.0.0.1:1"}},
		{"another site, without the token", cont(""), map[string]string{"Origin": "http://evil.example"}},
		{"an opaque origin", cont(tok), map[string]string{"Origin": "null"}},
		{"the console's origin, without the token", cont(""), same},
		{"the console's origin, a wrong token", cont(strings.Repeat("0", len(tok))), same},
		{"a prefix of the token", cont(tok[:len(tok)-1]), same},
		{"no Origin, Sec-Fetch-Site cross-site", cont(tok), map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"no Origin, Sec-Fetch-Site same-site", cont(tok), map[string]string{"Sec-Fetch-Site": "same-site"}},
		{"no Origin, another site's Referer", cont(tok), map[string]string{"Referer": "http://evil.example/page"}},
		{"no Origin, another loopback port's Referer", cont(tok), map[string]string{"Referer": "http://127.0.0.1:1/"}},
		{"nothing of a browser's, without the token", cont(""), nil},
	}
	for _, c := range refused {
		if code, body := cc.post(t, "/holds/verdict", c.form, c.header); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", c.name, code, body)
		}
	}
	if page := cc.get(t, "/holds"); !strings.Contains(page, `data-n="1"`) {
		t.Fatal("the frame left the Holds page after verdicts that were all to be refused")
	}

	abort := url.Values{"proxy": {"1"}, "n": {"1"}, "action": {"abort"}, "csrf": {tok}}
	if code, body := cc.post(t, "/holds/verdict", abort, map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin", "Referer": self + "/holds"}); code != http.StatusSeeOther {
		t.Fatalf("abort from the console's own form: %d %s, want 303", code, body)
	}
	if got, want := h.await(t, 2), `{"jsonrpc":"2.0","id":2,"error":{"code":-32099,"message":"aborted from the hoist console"}}`; got != want {
		t.Errorf("the host got %s, want the abort %s: a refused verdict reached the proxy", got, want)
	}
}
