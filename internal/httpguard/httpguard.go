// Package httpguard is who may connect to a local HTTP service of hoist's,
// by the rule of hoist-mcp --listen (manual, "Who may connect"): with a
// token, every request carries it as a bearer token; without one, the Host
// header must name the loopback address served, so that a page that
// rebinds its own name to 127.0.0.1 reaches nothing; and in both, a
// request a page of another site sends is refused by its Origin, and a
// request that changes something (a POST) that a browser sent without an
// Origin, by its Sec-Fetch-Site or else its Referer.
//
// hoist console uses it. The proxy's --listen keeps its own copy of the
// rule, unexported in proxy/, until it moves here (the same cases test both).
package httpguard

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Guard is the rule for one address served.
type Guard struct {
	// Addr is the address served, host:port.
	Addr string
	// Token, when set, is required of every request; Alt, when set, is
	// asked for the token of a request without an Authorization header
	// (a browser's cookie).
	Token string
	Alt   func(r *http.Request) (string, bool)
}

// Admit returns 0 to let r in, or the status to refuse it with and why.
func (g *Guard) Admit(r *http.Request) (int, string) {
	if g.Token != "" {
		tok, ok := BearerToken(r.Header.Get("Authorization"))
		if !ok && g.Alt != nil {
			tok, ok = g.Alt(r)
		}
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(g.Token)) != 1 {
			return http.StatusUnauthorized, "unauthorized: send Authorization: Bearer <token>"
		}
	} else if !g.allowedHost(r.Host) {
		return http.StatusForbidden, "forbidden: the Host header does not name this server's address"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !g.allowedOrigin(origin, r.Host) {
			return http.StatusForbidden, "forbidden: requests from pages on other sites are refused"
		}
	} else if !Safe(r.Method) {
		// A browser sends Origin with every POST; without it, what else
		// a browser says of where the request comes from must be this
		// server. A program (the attaching proxy, curl) says none of it.
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			return http.StatusForbidden, "forbidden: a request a page of another site sent (Sec-Fetch-Site: " + site + ") is refused"
		}
		if ref := r.Header.Get("Referer"); ref != "" && !g.allowedReferer(ref, r.Host) {
			return http.StatusForbidden, "forbidden: requests from pages on other sites are refused (by their Referer)"
		}
	}
	return 0, ""
}

// Safe reports whether method only reads (RFC 9110 §9.2.1): GET, HEAD,
// OPTIONS or TRACE.
func Safe(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// BearerToken returns the token of an Authorization header of the Bearer
// scheme. The scheme's name is case-insensitive and one or more spaces
// follow it (RFC 9110 §11.1, §11.4); the token itself is compared exactly.
func BearerToken(auth string) (string, bool) {
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.Trim(tok, " \t")
	return tok, tok != ""
}

func (g *Guard) allowedHost(h string) bool {
	if h == g.Addr {
		return true
	}
	_, port, err := net.SplitHostPort(g.Addr)
	if err != nil {
		return false
	}
	hh, hp, err := net.SplitHostPort(h)
	return err == nil && hp == port && IsLoopback(hh)
}

func (g *Guard) allowedOrigin(origin, host string) bool {
	for _, scheme := range []string{"http://", "https://"} {
		if o, ok := strings.CutPrefix(origin, scheme); ok {
			return o == host && (g.Token != "" || g.allowedHost(o))
		}
	}
	return false
}

// allowedReferer is allowedOrigin for a Referer, a whole address: its
// scheme and host must be this server's.
func (g *Guard) allowedReferer(ref, host string) bool {
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return g.allowedOrigin(u.Scheme+"://"+u.Host, host)
}

// IsLoopback reports whether host (a name or an address, brackets allowed)
// is localhost or a loopback address: the only hosts served without a
// token.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
