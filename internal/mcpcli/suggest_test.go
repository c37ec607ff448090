package mcpcli

import "testing"

// TestFlagSuggestions: a mistyped flag gets a did-you-mean, as a mistyped
// hoist command does; a flag like none gets none.
func TestFlagSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--recrd", "/tmp/x", "--", "srv"}, "hoist-mcp: unknown flag: --recrd\n\nDid you mean this?\n\t--record\nRun 'hoist-mcp --help' for usage.\n"},
		{[]string{"--upstrem", "http://127.0.0.1:1/mcp"}, "hoist-mcp: unknown flag: --upstrem\n\nDid you mean this?\n\t--upstream\nRun 'hoist-mcp --help' for usage.\n"},
		{[]string{"--flow-shadw", "--", "srv"}, "hoist-mcp: unknown flag: --flow-shadw\n\nDid you mean this?\n\t--flow-shadow\nRun 'hoist-mcp --help' for usage.\n"},
		{[]string{"--no-such-flag", "--", "srv"}, "hoist-mcp: unknown flag: --no-such-flag\nRun 'hoist-mcp --help' for usage.\n"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != 2 || stderr != tc.want {
			t.Errorf("hoist-mcp %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
