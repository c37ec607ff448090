package mcplog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScrubCommandCredentials covers the rule of ScrubCommand case by case:
// names that say credential, values shaped like one, and what a short flag's
// value needs before it is taken for one.
func TestScrubCommandCredentials(t *testing.T) {
	const (
		openai = "sk-proj-4fQx9TzL2mWc8vBn1RkE"
		stripe = "sk_live_51HxQ2eKZvKb0c3y7Fq"
		github = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
		hex32  = "9f86d081884c7d659a2feaa0c55ad015"
	)
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		// Names that contain key, token, secret, password, auth or
		// credential, in any case, as flags and as NAME=value.
		{"key in a long flag", []string{"srv", "--openai-key", "abc", "--model", "gpt-4o"}, []string{"srv", "--openai-key", Redacted, "--model", "gpt-4o"}},
		{"key in a long flag with =", []string{"srv", "--OpenAI-Key=abc"}, []string{"srv", "--OpenAI-Key=" + Redacted}},
		{"key in NAME=value", []string{"env", "STRIPE_KEY=abc", "PORT=8080", "srv"}, []string{"env", "STRIPE_KEY=" + Redacted, "PORT=8080", "srv"}},
		{"single-dash long flag", []string{"srv", "-apikey", "abc"}, []string{"srv", "-apikey", Redacted}},
		{"key file", []string{"srv", "--private-key-file", "/etc/srv/key.pem"}, []string{"srv", "--private-key-file", Redacted}},
		{"credentials in NAME=value", []string{"env", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "srv"}, []string{"env", "GOOGLE_APPLICATION_CREDENTIALS=" + Redacted, "srv"}},
		{"auth", []string{"srv", "--auth-header", "x"}, []string{"srv", "--auth-header", Redacted}},
		{"secret", []string{"srv", "--clientSecret=x"}, []string{"srv", "--clientSecret=" + Redacted}},
		{"password", []string{"srv", "--db-password", "x"}, []string{"srv", "--db-password", Redacted}},
		{"pass as a word", []string{"srv", "--db-pass", "x", "--passthrough", "on"}, []string{"srv", "--db-pass", Redacted, "--passthrough", "on"}},
		{"env of docker", []string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=" + github, "-e", "GITHUB_TOOLSETS", "ghcr.io/github/github-mcp-server"},
			[]string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=" + Redacted, "-e", "GITHUB_TOOLSETS", "ghcr.io/github/github-mcp-server"}},

		// Values shaped like a credential, wherever they stand.
		{"token prefix as an argument", []string{"srv", github}, []string{"srv", Redacted}},
		{"token prefix in a NAME=value", []string{"env", "X=" + stripe, "srv"}, []string{"env", "X=" + Redacted, "srv"}},
		{"token prefix after a long flag", []string{"srv", "--with", openai}, []string{"srv", "--with", Redacted}},
		{"a package named like a prefix", []string{"npx", "-y", "sk-learn-mcp-server"}, []string{"npx", "-y", "sk-learn-mcp-server"}},

		// A short flag's value: only when it looks like a credential, since
		// the letter means different things to different programs.
		{"short flag, credential", []string{"srv", "-k", openai}, []string{"srv", "-k", Redacted}},
		{"short flag, opaque", []string{"srv", "-k", hex32}, []string{"srv", "-k", Redacted}},
		{"short flag with =, opaque", []string{"srv", "-k=" + hex32}, []string{"srv", "-k=" + Redacted}},
		{"short flag, a word", []string{"srv", "-k", "hunter2"}, []string{"srv", "-k", "hunter2"}},
		{"short flag, a port", []string{"srv", "-p", "8080"}, []string{"srv", "-p", "8080"}},
		{"short flag, a path", []string{"srv", "-c", "/srv/" + hex32 + "/config.json"}, []string{"srv", "-c", "/srv/" + hex32 + "/config.json"}},
		{"short flag, a name", []string{"srv", "-n", "orders-server-production-2"}, []string{"srv", "-n", "orders-server-production-2"}},
		{"short flag, then a flag", []string{"srv", "-k", "--verbose"}, []string{"srv", "-k", "--verbose"}},
		{"npx -y", []string{"npx", "-y", "@modelcontextprotocol/server-everything"}, []string{"npx", "-y", "@modelcontextprotocol/server-everything"}},
		{"opaque, not after a short flag", []string{"srv", hex32}, []string{"srv", hex32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ScrubCommand(tc.in)); diff != "" {
				t.Errorf("ScrubCommand(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestScrubCommandLeavesNoSecret feeds every credential of the table above
// in every position: none may survive.
func TestScrubCommandLeavesNoSecret(t *testing.T) {
	secrets := []string{"sk-proj-4fQx9TzL2mWc8vBn1RkE", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "xoxb-2048-8123-Zm9vYmFyYmF6cXV4"}
	for _, s := range secrets {
		for _, argv := range [][]string{
			{"srv", s},
			{"srv", "--api-key", s},
			{"srv", "--anything=" + s},
			{"srv", "-k", s},
			{"env", "VALUE=" + s, "srv"},
			{"srv", "Authorization: Bearer " + s},
			{"srv", "https://h.example/mcp?key=" + s},
		} {
			if got := strings.Join(ScrubCommand(argv), " "); strings.Contains(got, s) {
				t.Errorf("ScrubCommand(%q) = %q keeps the credential", argv, got)
			}
		}
	}
}

// TestScrubURL: the user and password, the values of query parameters that
// carry credentials (by their name, or shaped as a token) and the fragment
// are redacted; the rest of the URL stays as it was.
func TestScrubURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://user:pw@h.example/mcp", "https://h.example/mcp"},
		{"https://h.example/mcp?api_key=k1&page=2", "https://h.example/mcp?api_key=" + Redacted + "&page=2"},
		{"https://h.example/cb?code=abc&state=xyz&scope=read", "https://h.example/cb?code=" + Redacted + "&state=" + Redacted + "&scope=read"},
		{"https://h.example/mcp?jwt=a.b.c&session=s1&sessionid=s2&JSESSIONID=s3&sid=s4", "https://h.example/mcp?jwt=" + Redacted + "&session=" + Redacted + "&sessionid=" + Redacted + "&JSESSIONID=" + Redacted + "&sid=" + Redacted},
		{"https://h.example/mcp?pat=p1&github_pat=p2&path=/x", "https://h.example/mcp?pat=" + Redacted + "&github_pat=" + Redacted + "&path=/x"},
		{"https://h.example/mcp?access_token=a&id_token=b&refresh_token=c&apikey=d&client_secret=e&sig=f&signature=g&X-Amz-Credential=h",
			"https://h.example/mcp?access_token=" + Redacted + "&id_token=" + Redacted + "&refresh_token=" + Redacted + "&apikey=" + Redacted + "&client_secret=" + Redacted + "&sig=" + Redacted + "&signature=" + Redacted + "&X-Amz-Credential=" + Redacted},
		{"https://h.example/mcp?c%6Fde=x", "https://h.example/mcp?c%6Fde=" + Redacted},
		{"https://h.example/mcp?q=ghp_16C7e42F292c6912E7710c838347Ae178B4a", "https://h.example/mcp?q=" + Redacted},
		{"https://h.example/mcp?country_code=fr", "https://h.example/mcp?country_code=" + Redacted},
		{"https://h.example/mcp?pattern=a&patch=b&stated=c", "https://h.example/mcp?pattern=a&patch=b&stated=c"},
		{"https://h.example/mcp#access_token=t&token_type=bearer", "https://h.example/mcp#" + Redacted},
		{"https://h.example/mcp?x=1#frag", "https://h.example/mcp?x=1#" + Redacted},
		{"https://h.example/mcp", "https://h.example/mcp"},
		{"http://127.0.0.1:9/mcp?key=abc&v=2", "http://127.0.0.1:9/mcp?key=" + Redacted + "&v=2"},
		{"not a url", "not a url"},
	} {
		if got := ScrubURL(tc.in); got != tc.want {
			t.Errorf("ScrubURL(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
