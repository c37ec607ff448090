package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(ptest.MainRetWithDefault(m, "prism")) }

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"learn", "--out", "x"}, "say what to read"},
		{[]string{"learn", "--sessions", "a/*"}, "--out: want a file"},
		{[]string{"learn", "--sessions", "a/*", "-o", "x", "--folds", "0"}, "--folds 0: want 1 to 1000"},
		{[]string{"learn", "--sessions", "a/*", "-o", "x", "--tools", "k.json"}, "--tools and --tool-schemas go with --tau2"},
		{[]string{"export", "--sessions", "a/*", "-o", "x", "--shards", "0"}, "--shards 0: want at least 1"},
		{[]string{"learn", "--sessions", "a/*", "-o", "x", "extra"}, `unexpected argument "extra"`},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("hoist-beam %q: exit %d, %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestLearnCommand: hoist-beam learn on Prism writes the flow the pipeline
// gives (which the pipeline's tests hold to hoist learn's), and a learn
// without episodes of the domain fails naming it.
func TestLearnCommand(t *testing.T) {
	logs := filepath.Join(testbin.Root(), "testdata", "tau2", "logs", "airline", "*", "*")
	out := filepath.Join(t.TempDir(), "airline.flow.json")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"learn", "--sessions", logs, "--domain", "airline", "--folds", "2", "--min-support", "1", "-o", out}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(data, []byte(`"domain": "airline"`)) || !bytes.Contains(data, []byte(`"episodes": 3,`)) {
		t.Errorf("wrote %v, %.300s", err, data)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"learn", "--sessions", logs, "--domain", "retail", "-o", out + ".2"}, &stderr); code != 1 || !strings.Contains(stderr.String(), `no episodes to learn from in domain "retail"`) {
		t.Errorf("a learn of no episodes: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	both := filepath.Join(testbin.Root(), "testdata", "tau2", "logs", "*", "*", "*")
	if code := run(context.Background(), []string{"learn", "--sessions", both, "-o", out + ".3"}, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "episodes of 2 domains: airline, retail; choose one with --domain") {
		t.Errorf("a learn of two domains without --domain: exit %d, %s", code, stderr.String())
	}
}
