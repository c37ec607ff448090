package mcplog

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a credential's value wherever hoist writes a command or
// a URL.
const Redacted = "<redacted>"

// secretName matches names of flags, variables, headers and query
// parameters whose values are credentials: --api-key, --openai-key, --token,
// GITHUB_TOKEN, STRIPE_KEY, Authorization, client_secret, sig, and the like.
var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw(or)?d|pwd|auth|credential|bearer|cookie|signature|^sig$|(^|[-_.])pass($|[-_.]))`)

// tokenPrefixes begin credentials that services issue in a recognizable
// form: OpenAI and Anthropic, Stripe, GitHub, GitLab, Slack, AWS access
// keys, Google API keys and OAuth tokens, npm, Hugging Face, PyPI,
// DigitalOcean, Shopify, and JWTs (a JSON header, base64url).
var tokenPrefixes = []string{
	"sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_",
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
	"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-",
	"AKIA", "ASIA", "AIza", "ya29.",
	"npm_", "hf_", "pypi-", "dop_v1_", "shpat_", "eyJ",
}

// tokenShaped reports whether v begins as a well-known token does and goes
// on as one: no spaces, and a run of at least ten letters and digits after
// the prefix (so that a package named sk-learn-server is not taken for
// one).
func tokenShaped(v string) bool {
	if strings.ContainsAny(v, " \t") {
		return false
	}
	for _, p := range tokenPrefixes {
		if rest, ok := strings.CutPrefix(v, p); ok {
			n, _, _ := longestRun(rest)
			return n >= 10
		}
	}
	return false
}

// opaque reports whether v, the value of a short flag, looks like a random
// key: no spaces or slashes, and a run of at least sixteen letters and
// digits holding both.
func opaque(v string) bool {
	if strings.ContainsAny(v, " \t/") {
		return false
	}
	n, letter, digit := longestRun(v)
	return n >= 16 && letter && digit
}

// longestRun returns the length of the longest run of ASCII letters and
// digits in v, and whether that run holds a letter and a digit.
func longestRun(v string) (n int, letter, digit bool) {
	start := 0
	for i := 0; i <= len(v); i++ {
		if i < len(v) && isAlnum(v[i]) {
			continue
		}
		if i-start > n {
			n, letter, digit = i-start, false, false
			for _, c := range []byte(v[start:i]) {
				if c >= '0' && c <= '9' {
					digit = true
				} else {
					letter = true
				}
			}
		}
		start = i + 1
	}
	return n, letter, digit
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// headerArg is an argument in the form of an HTTP header, "Name: value".
var headerArg = regexp.MustCompile(`^([A-Za-z0-9-]+):\s*(.*)$`)

// envArg is an argument in the form of an environment assignment, NAME=value.
var envArg = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// ScrubCommand returns a copy of a server command with the values that name
// or look like a credential replaced by Redacted. The log header keeps the
// command (server_command), and from there it reaches the store and its
// exports. What is replaced:
//
//   - the value of a flag, NAME=value or "Name: value" header whose name
//     contains key, token, secret, password, auth or credential, in any case,
//     or passwd, pwd, bearer, cookie, signature, sig, or pass as a word of
//     its own: --openai-key X, --token=X, STRIPE_KEY=X, "X-Api-Key: X";
//   - the word after "Bearer " or "Basic ";
//   - in a URL, the user and password, the fragment, and the values of
//     query parameters named as above or as URLs carry credentials (code,
//     state, jwt, session, pat and the like: ScrubURL);
//   - any argument or value that begins as a well-known token does (sk-,
//     ghp_, github_pat_, xoxb-, AKIA, eyJ and a few more) and goes on
//     as one, with a run of ten or more letters and digits: a credential
//     named nowhere;
//   - the value of a short flag (-k X, -k=X) only when it looks like a
//     credential: a token as above, or an opaque string with sixteen or more
//     letters and digits in a row, both kinds, and no slash (a path).
//
// A short flag's letter says nothing by itself: -p is a port to one program
// and a password to another, and npx's -y takes no value at all, so
// "-p 8080", "-y some-server" and "-k hunter2" stay as they are. This is
// best effort; credentials belong in the server's environment, which hoist
// never records (manual, "Privacy").
func ScrubCommand(args []string) []string {
	out := make([]string, len(args))
	next := keepNext
	for i, a := range args {
		isValue := !strings.HasPrefix(a, "-") || a == "-"
		switch {
		case next == redactNext && isValue:
			out[i] = Redacted
		case next == checkNext && isValue:
			out[i] = scrubShortValue(a)
		default:
			out[i] = scrubArg(a, &next)
			continue
		}
		next = keepNext
	}
	return out
}

// What ScrubCommand does with the argument after a flag.
const (
	keepNext   = iota // scrub it as any argument
	redactNext        // the flag names a credential: redact it
	checkNext         // a short flag: redact it if it looks like a key
)

// scrubShortValue scrubs the argument after a short flag: as any argument,
// and redacted when it looks like a key (only its value, in NAME=value, as
// for docker's -e).
func scrubShortValue(a string) string {
	if m := envArg.FindStringSubmatch(a); m != nil {
		if !secretName.MatchString(m[1]) && opaque(m[2]) {
			return m[1] + "=" + Redacted
		}
	} else if opaque(a) {
		return Redacted
	}
	var next int
	return scrubArg(a, &next)
}

func scrubArg(a string, next *int) string {
	*next = keepNext
	if strings.HasPrefix(a, "-") && len(a) > 1 {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		short := len(name) == 1 && a[1] != '-'
		switch {
		case secretName.MatchString(name) && hasValue:
			return a[:len(a)-len(value)] + Redacted
		case secretName.MatchString(name):
			*next = redactNext
			return a
		case short && hasValue && opaque(value):
			return a[:len(a)-len(value)] + Redacted
		case hasValue:
			return a[:len(a)-len(value)] + scrubValue(value)
		case short:
			*next = checkNext
		}
		return a
	}
	if m := envArg.FindStringSubmatch(a); m != nil {
		if secretName.MatchString(m[1]) {
			return m[1] + "=" + Redacted
		}
		return m[1] + "=" + scrubValue(m[2])
	}
	return scrubValue(a)
}

// scrubValue scrubs a free-standing value: a header, a bearer token or a URL.
func scrubValue(v string) string {
	if m := headerArg.FindStringSubmatch(v); m != nil && !strings.Contains(m[1], "/") {
		if secretName.MatchString(m[1]) {
			return m[1] + ": " + Redacted
		}
	}
	lower := strings.ToLower(v)
	if strings.HasPrefix(lower, "bearer ") || strings.HasPrefix(lower, "basic ") {
		return v[:strings.IndexByte(v, ' ')+1] + Redacted
	}
	if strings.Contains(v, "://") {
		return ScrubURL(v)
	}
	if tokenShaped(v) {
		return Redacted
	}
	return v
}

// urlSecretName matches the names of query parameters that carry a
// credential in URLs, beyond the names secretName matches: an OAuth
// authorization code and state, a JWT, a session id (session, sessionid,
// JSESSIONID, sid), a personal access token (pat), a nonce, a one-time
// password, a ticket and an HMAC. They are redacted only in URLs: as a
// flag, --session or --code names something else as often as not.
var urlSecretName = regexp.MustCompile(`(?i)(session|jwt|(^|[-_.])(code|pat|sid|state|nonce|otp|ticket|hmac)($|[-_.]))`)

// ScrubURL returns rawURL without its user and password, and with the
// values of query parameters that carry credentials replaced by Redacted:
// those named as in ScrubCommand, those named as an OAuth code or state, a
// JWT, a session, a personal access token and the like (urlSecretName), and
// any value that begins as a well-known token does. A fragment is replaced
// whole: it is never sent to the server, and an OAuth implicit grant puts
// its tokens there. A string that does not parse as a URL is returned with
// everything after its scheme redacted, rather than risk keeping a secret.
func ScrubURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		if i := strings.Index(rawURL, "://"); i >= 0 {
			return rawURL[:i+3] + Redacted
		}
		return rawURL
	}
	u.User = nil
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			name, value, ok := strings.Cut(p, "=")
			if dn, err := url.QueryUnescape(name); err == nil {
				name = dn
			}
			if dv, err := url.QueryUnescape(value); err == nil {
				value = dv
			}
			if ok && (secretName.MatchString(name) || urlSecretName.MatchString(name) || tokenShaped(value)) {
				parts[i] = p[:strings.IndexByte(p, '=')+1] + Redacted
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	fragment := u.Fragment != ""
	u.Fragment, u.RawFragment = "", ""
	if fragment {
		return u.String() + "#" + Redacted
	}
	return u.String()
}
