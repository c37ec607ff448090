package proxy_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestUpstreamURLSecretsNotRecorded gives --upstream a URL carrying the
// credentials URLs carry in the wild (an OAuth code and tokens, a JWT, a
// session, a personal access token, a signature, a fragment) and follows
// it from the log header through `hoist ingest` into a store and out of
// `hoist export`: none of their values may reach any of them, while the
// URL itself is still recorded.
func TestUpstreamURLSecretsNotRecorded(t *testing.T) {
	secrets := map[string]string{
		"code":             "oauth-code-5f1e",
		"jwt":              "hdr0.payload1.sig2",
		"session":          "sess-7c2a90",
		"pat":              "pat-0b77e1",
		"sig":              "sig-44c0aa",
		"signature":        "signature-9d12",
		"access_token":     "acc-31f2",
		"id_token":         "idt-82aa",
		"refresh_token":    "ref-11b9",
		"apikey":           "apik-4413",
		"client_secret":    "cls-77ad",
		"state":            "state-e51c",
		"sessionid":        "sid-0a0a",
		"X-Amz-Credential": "AKIDEXAMPLE-20260101",
	}
	var q []string
	for name, v := range secrets {
		q = append(q, name+"="+v)
	}
	const frag = "frag-token-6b1d"
	target := startDemoHTTP(t)
	dir := t.TempDir()
	p := startProxy(t, nil, "--record", dir, "--upstream", target+"?keep=visible-1&"+strings.Join(q, "&")+"#"+frag)
	p.send(init16(1))
	if l := p.readLine(); !strings.Contains(l, `"serverInfo":{"name":"hoist-mcp-demo"`) {
		t.Fatalf("initialize answer: %s", l)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("hoist-mcp exited %d; stderr:\n%s", code, p.stderr)
	}

	header, _, _ := readLog(t, dir)
	up, _ := header["upstream"].(string)
	if !strings.Contains(up, "keep=visible-1") || !strings.HasPrefix(up, target) {
		t.Errorf("the header's upstream %q lost the URL itself", up)
	}

	store := filepath.Join(t.TempDir(), "hoist.db")
	hoist := testbin.Build(t, "hoist")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(hoist, args...)
		cmd.Env = testbin.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hoist %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("ingest", "--sessions", dir, "--store", store)
	exports := t.TempDir()
	for _, format := range []string{"jsonl", "arrow"} {
		run("export", "--store", store, "--format", format, "--out", filepath.Join(exports, format))
	}

	// Every file: the log, the store (its WAL included) and the exports.
	places := []string{dir, filepath.Dir(store), exports}
	var files int
	for _, root := range places {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for name, v := range secrets {
				if bytes.Contains(data, []byte(v)) {
					t.Errorf("%s holds the value of the URL's %s", path, name)
				}
			}
			if bytes.Contains(data, []byte(frag)) {
				t.Errorf("%s holds the URL's fragment", path)
			}
			return nil
		})
	}
	if files < 3 {
		t.Fatalf("found %d files to check", files)
	}
	for name, v := range secrets {
		if strings.Contains(p.stderr.String(), v) {
			t.Errorf("hoist-mcp's stderr holds the value of the URL's %s:\n%s", name, p.stderr)
		}
	}
}
