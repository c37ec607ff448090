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
// parameters whose values are credentials: --api-key, --token,
// GITHUB_TOKEN, Authorization, client_secret, sig, and the like.
var secretName = regexp.MustCompile(`(?i)(api[-_]?key|apikey|token|secret|passw(or)?d|passwd|pwd|auth|credential|bearer|private[-_]?key|access[-_]?key|session[-_]?key|cookie|signature|^sig$|^key$)`)

// headerArg is an argument in the form of an HTTP header, "Name: value".
var headerArg = regexp.MustCompile(`^([A-Za-z0-9-]+):\s*(.*)$`)

// envArg is an argument in the form of an environment assignment, NAME=value.
var envArg = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// ScrubCommand returns a copy of a server command with the values of
// credential-looking arguments replaced by "<redacted>" (manual, "Privacy"):
// --api-key X, --token=X, GITHUB_TOKEN=X, "Authorization: Bearer X", and URLs
// with a user, a password or credential-looking query parameters. It is best
// effort; credentials belong in the server's environment, which hoist never
// records.
func ScrubCommand(args []string) []string {
	out := make([]string, len(args))
	redactNext := false
	for i, a := range args {
		if redactNext {
			redactNext = false
			if !strings.HasPrefix(a, "-") || a == "-" {
				out[i] = Redacted
				continue
			}
		}
		out[i] = scrubArg(a, &redactNext)
	}
	return out
}

func scrubArg(a string, redactNext *bool) string {
	if strings.HasPrefix(a, "-") && len(a) > 1 {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if secretName.MatchString(name) {
			if hasValue {
				return a[:len(a)-len(value)] + Redacted
			}
			*redactNext = true
			return a
		}
		if hasValue {
			return a[:len(a)-len(value)] + scrubValue(value)
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
	return v
}

// ScrubURL returns rawURL without its user and password, and with the values
// of credential-looking query parameters replaced by "<redacted>". A string
// that does not parse as a URL is returned with everything after its scheme
// redacted, rather than risk keeping a secret.
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
			name, _, ok := strings.Cut(p, "=")
			if dn, err := url.QueryUnescape(name); err == nil {
				name = dn
			}
			if ok && secretName.MatchString(name) {
				parts[i] = p[:strings.IndexByte(p, '=')+1] + Redacted
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.String()
}
