package console_test

import (
	"os"
	"path/filepath"
	"testing"
)

// A console started with --token-file lets a proxy attach only with its
// token (--console-token-file), and refuses one without: the proxy says
// why, holds nothing and keeps relaying.
func TestConsoleAttachToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("tok-hold-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startConsole(t, "--sessions", dir, "--token-file", tokenFile)

	without := startHost(t, filepath.Join(dir, "a"), "--console", addr)
	without.waitSaid(t, "console: not attached to "+addr+" (the console answered 401")
	if got := without.call(t, 1, "tools/list", `{}`); len(got) == 0 {
		t.Fatal("no answer to tools/list without the console")
	}

	with := startHost(t, filepath.Join(dir, "b"), "--console", addr, "--console-token-file", tokenFile)
	with.waitSaid(t, "console: attached to "+addr)
}
