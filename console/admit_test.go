package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// newTestServer is a console over an empty directory of logs.
func newTestServer(t *testing.T, token string) *Server {
	t.Helper()
	src, err := OpenDir(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Source: src, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The console admits by hoist-mcp --listen's rule (issue 15, point 1):
// loopback only with Host and Origin checked, a bearer token otherwise.
func TestGuard(t *testing.T) {
	const addr = "127.0.0.1:8940"
	cases := []struct {
		name   string
		method string
		token  string
		host   string
		header map[string]string
		path   string
		body   string // after the verdict's fields
		want   int
	}{
		{name: "loopback host", host: addr, want: 200},
		{name: "localhost by name", host: "localhost:8940", want: 200},
		{name: "ipv6 loopback", host: "[::1]:8940", want: 200},
		{name: "a rebound name", host: "evil.example:8940", want: 403},
		{name: "another port", host: "127.0.0.1:9999", want: 403},
		{name: "same-origin page", host: addr, header: map[string]string{"Origin": "http://" + addr}, want: 200},
		{name: "another site's page", host: addr, header: map[string]string{"Origin": "http://evil.example"}, want: 403},
		{name: "a page on another loopback port", host: addr, header: map[string]string{"Origin": "http://127.0.0.1:3000"}, want: 403},
		{name: "an opaque origin", host: addr, header: map[string]string{"Origin": "null"}, want: 403},
		{name: "token missing", token: "s3cret", host: "console.example:8940", want: 401},
		{name: "token wrong", token: "s3cret", host: "console.example:8940", header: map[string]string{"Authorization": "Bearer nope"}, want: 401},
		{name: "token right, any host", token: "s3cret", host: "console.example:8940", header: map[string]string{"Authorization": "Bearer s3cret"}, want: 200},
		{name: "scheme case-insensitive", token: "s3cret", host: "console.example:8940", header: map[string]string{"Authorization": "bearer  s3cret"}, want: 200},
		{name: "token in a cookie", token: "s3cret", host: "console.example:8940", header: map[string]string{"Cookie": tokenCookie + "=s3cret"}, want: 200},
		{name: "cookie wrong", token: "s3cret", host: "console.example:8940", header: map[string]string{"Cookie": tokenCookie + "=nope"}, want: 401},
		{name: "token with another site's origin", token: "s3cret", host: "console.example:8940",
			header: map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}, want: 403},
		{name: "another site's form posting a verdict", method: "POST", path: "/holds/verdict", host: addr,
			header: map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, want: 403},
		{name: "the page posting a verdict", method: "POST", path: "/holds/verdict", host: addr, body: "&csrf=" + formToken,
			header: map[string]string{"Origin": "http://" + addr, "Content-Type": "application/x-www-form-urlencoded"}, want: 303},
		{name: "the page's fetch, the token in its header", method: "POST", path: "/holds/verdict", host: addr,
			header: map[string]string{"Origin": "http://" + addr, "Content-Type": "application/x-www-form-urlencoded", "X-Hoist-Csrf": formToken}, want: 303},
		{name: "a verdict without the form token", method: "POST", path: "/holds/verdict", host: addr,
			header: map[string]string{"Origin": "http://" + addr, "Content-Type": "application/x-www-form-urlencoded"}, want: 403},
		{name: "a verdict with the bearer token but not the form token", method: "POST", path: "/holds/verdict", token: "s3cret", host: "console.example:8940",
			header: map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/x-www-form-urlencoded"}, want: 403},
		{name: "a verdict with the cookie and the form token", method: "POST", path: "/holds/verdict", token: "s3cret", host: "console.example:8940", body: "&csrf=" + formToken,
			header: map[string]string{"Cookie": tokenCookie + "=s3cret", "Origin": "http://console.example:8940", "Content-Type": "application/x-www-form-urlencoded"}, want: 303},
		{name: "another site's page by Sec-Fetch-Site", method: "POST", path: "/holds/verdict", host: addr, body: "&csrf=" + formToken,
			header: map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/x-www-form-urlencoded"}, want: 403},
		{name: "another site's page by Referer", method: "POST", path: "/holds/breakpoints", host: addr, body: "&csrf=" + formToken,
			header: map[string]string{"Referer": "http://evil.example/", "Content-Type": "application/x-www-form-urlencoded"}, want: 403},
		{name: "the console's page by Referer", method: "POST", path: "/holds/breakpoints", host: addr, body: "&csrf=" + formToken,
			header: map[string]string{"Referer": "http://" + addr + "/holds", "Content-Type": "application/x-www-form-urlencoded"}, want: 303},
		{name: "token once in the address", token: "s3cret", host: "console.example:8940", path: "/?token=s3cret", want: 303},
		{name: "wrong token in the address", token: "s3cret", host: "console.example:8940", path: "/?token=nope", want: 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newTestServer(t, c.token).Guarded(addr)
			path := c.path
			if path == "" {
				path = "/"
			}
			method := c.method
			if method == "" {
				method = "GET"
			}
			r := httptest.NewRequest(method, path, strings.NewReader("proxy=1&n=1&action=continue"+c.body))
			r.Host = c.host
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body)
			}
			// Every answer, a refusal too, forbids framing the console.
			if xfo := w.Header().Get("X-Frame-Options"); xfo != "DENY" {
				t.Errorf("X-Frame-Options %q, want DENY", xfo)
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy %q, want frame-ancestors 'none' beside default-src 'self'", csp)
			}
			switch w.Code {
			case 401:
				if w.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				if strings.Contains(w.Body.String(), "s3cret") {
					t.Error("the refusal shows the token")
				}
			case 303:
				if c.token == "" || c.method == "POST" {
					break // the verdict's redirect back to the page
				}
				var ck *http.Cookie
				for _, x := range w.Result().Cookies() {
					if x.Name == tokenCookie {
						ck = x
					}
				}
				if ck == nil || ck.Value != c.token || !ck.HttpOnly {
					t.Errorf("cookie %+v, want the token, HttpOnly", ck)
				}
				if loc := w.Header().Get("Location"); strings.Contains(loc, "token") {
					t.Errorf("redirected to %q, which keeps the token in the address", loc)
				}
			case 200:
				if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
					t.Errorf("Content-Security-Policy %q: the page may load from elsewhere", csp)
				}
			}
		})
	}
}

// Serve refuses a non-loopback address without a token, whatever the
// command line checked.
func TestServeRefusesOpenAddress(t *testing.T) {
	s := newTestServer(t, "")
	ln := fakeListener{addr: "192.0.2.1:8940"}
	err := s.Serve(context.Background(), ln)
	if err == nil || !strings.Contains(err.Error(), "only loopback addresses") {
		t.Fatalf("Serve on %s without a token: %v", ln.addr, err)
	}
}
