package httpguard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Who may connect, by --listen's rule: the cases of proxy/listen's tests,
// and the alternative token source a browser needs.
func TestAdmit(t *testing.T) {
	const addr = "127.0.0.1:8931"
	cases := []struct {
		name, token, host, auth, origin, alt string
		method, site, referer                string
		want                                 int
	}{
		{name: "loopback", host: addr, want: 0},
		{name: "localhost on the port", host: "localhost:8931", want: 0},
		{name: "a rebound name", host: "attacker.example:8931", want: 403},
		{name: "loopback on another port", host: "127.0.0.1:1", want: 403},
		{name: "same origin", host: addr, origin: "http://" + addr, want: 0},
		{name: "another origin", host: addr, origin: "https://attacker.example", want: 403},
		{name: "no token sent", token: "t0k", host: "example.net:8931", want: 401},
		{name: "the token", token: "t0k", host: "example.net:8931", auth: "Bearer t0k", want: 0},
		{name: "a prefix of the token", token: "t0k", host: "example.net:8931", auth: "Bearer t0", want: 401},
		{name: "another scheme", token: "t0k", host: "example.net:8931", auth: "Basic t0k", want: 401},
		{name: "the token from the alternative", token: "t0k", host: "example.net:8931", alt: "t0k", want: 0},
		{name: "a wrong alternative", token: "t0k", host: "example.net:8931", alt: "nope", want: 401},
		{name: "token and another origin", token: "t0k", host: "example.net:8931", auth: "Bearer t0k", origin: "http://attacker.example", want: 403},
		{name: "a post from a program", method: "POST", host: addr, want: 0},
		{name: "a post from the same origin", method: "POST", host: addr, origin: "http://" + addr, site: "same-origin", want: 0},
		{name: "a post from another loopback origin", method: "POST", host: addr, origin: "http://127.0.0.1:3000", want: 403},
		{name: "a post another site's page sent, no Origin", method: "POST", host: addr, site: "cross-site", want: 403},
		{name: "a post a sibling site's page sent, no Origin", method: "POST", host: addr, site: "same-site", want: 403},
		{name: "a post the user started, no Origin", method: "POST", host: addr, site: "none", want: 0},
		{name: "a post from this server's page by Referer", method: "POST", host: addr, referer: "http://" + addr + "/holds", want: 0},
		{name: "a post from another site's page by Referer", method: "POST", host: addr, referer: "http://attacker.example/x", want: 403},
		{name: "a post from another port's page by Referer", method: "POST", host: addr, referer: "http://127.0.0.1:3000/", want: 403},
		{name: "a post with a Referer not an address", method: "POST", host: addr, referer: "about:blank", want: 403},
		{name: "a post with the token, another site's Referer", method: "POST", token: "t0k", host: "example.net:8931", auth: "Bearer t0k", referer: "https://attacker.example/", want: 403},
		{name: "a get another site's page sent", host: addr, site: "cross-site", want: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Guard{Addr: addr, Token: c.token}
			if c.alt != "" {
				g.Alt = func(*http.Request) (string, bool) { return c.alt, true }
			}
			method := c.method
			if method == "" {
				method = "GET"
			}
			r := httptest.NewRequest(method, "/", nil)
			if c.site != "" {
				r.Header.Set("Sec-Fetch-Site", c.site)
			}
			if c.referer != "" {
				r.Header.Set("Referer", c.referer)
			}
			r.Host = c.host
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if got, why := g.Admit(r); got != c.want {
				t.Errorf("Admit = %d (%s), want %d", got, why, c.want)
			}
		})
	}
}
