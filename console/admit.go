package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"

	"github.com/hoist-mcp/hoist/internal/httpguard"
)

// tokenCookie carries the token for a browser, which cannot send an
// Authorization header when it follows a link: a page opened once as
// /?token=TOKEN sets it.
const tokenCookie = "hoist_console_token"

// The console's own forms and fetches carry formToken (issue 25, point 4):
// the field csrf of a form, or the header X-Hoist-Csrf of a fetch. It is
// drawn at random once per console process and is only ever written into
// the console's pages, which no other site can read (no CORS) or frame
// (frame-ancestors 'none'), so a page the user visits cannot send it: it
// cannot continue, inject or abort a held frame, or set the breakpoints,
// whatever cookie or loopback address lets the user's browser in.
const (
	formField  = "csrf"
	formHeader = "X-Hoist-Csrf"
)

var formToken = newFormToken()

func newFormToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// The pages write the token with {{csrf}}.
func init() { funcs["csrf"] = func() string { return formToken } }

// attachPath is the proxy's attachment (attach.go): a program's request,
// not a form, whose body is the protocol's stream and is not read here.
const attachPath = "/hold/attach"

// headers are the console's answers' headers, refusals included: no page
// may load anything from elsewhere, frame the console, or post a form
// anywhere else.
var headers = map[string]string{
	"X-Content-Type-Options":  "nosniff",
	"X-Frame-Options":         "DENY",
	"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
	"Referrer-Policy":         "same-origin",
}

// IsLoopback reports whether host is localhost or a loopback address: the
// only hosts the console serves without a token.
func IsLoopback(host string) bool { return httpguard.IsLoopback(host) }

// guarded wraps h with hoist-mcp --listen's rule of who may connect
// (httpguard: Host, token, and for a POST its Origin, Sec-Fetch-Site or
// Referer), the token also taken from the cookie or from ?token=, whose
// visit sets the cookie and drops the token from the address bar; and a
// POST but the proxy's attachment must carry the form token.
func guarded(addr, token string, h http.Handler) http.Handler {
	g := &httpguard.Guard{Addr: addr, Token: token, Alt: func(r *http.Request) (string, bool) {
		if c, err := r.Cookie(tokenCookie); err == nil && c.Value != "" {
			return c.Value, true
		}
		tok := r.URL.Query().Get("token")
		return tok, tok != ""
	}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		status, why := g.Admit(r)
		if status == 0 && !httpguard.Safe(r.Method) && r.URL.Path != attachPath && !formTokenOf(r) {
			status, why = http.StatusForbidden, "forbidden: the request does not carry the console's form token (field "+formField+" or header "+formHeader+"); reload the console's page and send it again"
		}
		if status != 0 {
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
		h.ServeHTTP(w, r)
	})
}

// formTokenOf reports whether r carries the form token, compared in
// constant time.
func formTokenOf(r *http.Request) bool {
	sent := r.Header.Get(formHeader)
	if sent == "" {
		sent = r.PostFormValue(formField)
	}
	return sent != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(formToken)) == 1
}
