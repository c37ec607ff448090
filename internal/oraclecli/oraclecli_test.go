package oraclecli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

func parse(t *testing.T, args ...string) *Flags {
	t.Helper()
	f := &Flags{}
	fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.Add(fl)
	if err := fl.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCheck(t *testing.T) {
	if err := parse(t).Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	err := parse(t, "--oracle", "gpt").Check()
	if err == nil || err.Error() != `--oracle: unknown oracle "gpt": want jev, replay or mock` {
		t.Errorf("--oracle gpt: %v", err)
	}
}

func TestOpen(t *testing.T) {
	none := func(string) string { return "" }
	dir := filepath.Join(t.TempDir(), "a", "cache")

	// jev without a key still opens, answers from the cache, and says why
	// it cannot ask.
	o, cache, why, err := parse(t, "--oracle-cache", dir, "--oracle-model", "m").Open(nil, none)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(why, client.EnvKey) {
		t.Errorf("unavailable = %q, want it to name %s", why, client.EnvKey)
	}
	if cache == nil || cache.Dir() != dir {
		t.Fatalf("cache = %v", cache)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("cache directory: %v, %v", st, err)
	}
	q := oracle.Confirmation(oracle.Exchange{Said: "Cancel it?", Reply: "yes"}, oracle.Call{Tool: "cancel", Arguments: []byte(`{}`)})
	if a := o.Ask(context.Background(), q); a.Answered {
		t.Errorf("jev without a key answered %+v", a)
	}

	// mock needs no cache and answers.
	o, cache, why, err = parse(t, "--oracle", "mock").Open(nil, none)
	if err != nil || cache != nil || why != "" {
		t.Fatalf("mock: %v, %v, %q", cache, err, why)
	}
	if a := o.Ask(context.Background(), q); !a.Answered || a.PYes != client.MockYes {
		t.Errorf("mock answered %+v", a)
	}

	// A bad URL is the flag's error, not the whole URL's.
	_, _, _, err = parse(t, "--oracle-cache", dir, "--oracle-url", "ftp://x").Open(nil, none)
	if err == nil || !strings.HasPrefix(err.Error(), "--oracle jev: --oracle-url: ") {
		t.Errorf("bad URL: %v", err)
	}
}
