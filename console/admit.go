package console

import (
	"net/http"

	"github.com/hoist-mcp/hoist/internal/httpguard"
)

// tokenCookie carries the token for a browser, which cannot send an
// Authorization header when it follows a link: a page opened once as
// /?token=TOKEN sets it.
const tokenCookie = "hoist_console_token"

// IsLoopback reports whether host is localhost or a loopback address: the
// only hosts the console serves without a token.
func IsLoopback(host string) bool { return httpguard.IsLoopback(host) }

// guarded wraps h with hoist-mcp --listen's rule of who may connect
// (httpguard), the token also taken from the cookie or from ?token=, whose
// visit sets the cookie and drops the token from the address bar.
func guarded(addr, token string, h http.Handler) http.Handler {
	g := &httpguard.Guard{Addr: addr, Token: token, Alt: func(r *http.Request) (string, bool) {
		if c, err := r.Cookie(tokenCookie); err == nil && c.Value != "" {
			return c.Value, true
		}
		tok := r.URL.Query().Get("token")
		return tok, tok != ""
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, why := g.Admit(r); status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="hoist console"`)
				why += ", or open the console once as /?token=<token>"
			}
			// Closing the connection spares the server reading what is
			// left of the request first: an attaching proxy's body never
			// ends, and would wait for the refusal for ever.
			w.Header().Set("Connection", "close")
			http.Error(w, why, status)
			return
		}
		if token != "" && r.URL.Query().Has("token") {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'")
		h.ServeHTTP(w, r)
	})
}
