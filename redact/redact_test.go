package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDirSameWhateverWorkers: the copy is a function of the key and the
// input alone, byte for byte, on one worker or several, and its manifest
// counts the same.
func TestDirSameWhateverWorkers(t *testing.T) {
	in := filepath.Join("..", "testdata", "tau2", "logs")
	dir := t.TempDir()
	var copies [2]map[string][]byte
	var manifests [2]*Manifest
	for i, workers := range []int{1, 4} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		m, err := Dir(context.Background(), in, out, Options{Key: testKey, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		manifests[i] = m
		copies[i] = map[string][]byte{}
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(out, p)
				copies[i][rel] = b
			}
			return err
		})
	}
	if d := cmp.Diff(manifests[0], manifests[1]); d != "" {
		t.Errorf("manifests differ:\n%s", d)
	}
	if len(copies[0]) != 16 { // 5 logs, 5 contexts, 5 metas, the manifest
		t.Errorf("%d files written", len(copies[0]))
	}
	for name, b := range copies[0] {
		if !bytes.Equal(b, copies[1][name]) {
			t.Errorf("%s differs between 1 and 4 workers", name)
		}
	}
	// The output exists now: a second copy into it is refused.
	if _, err := Dir(context.Background(), in, filepath.Join(dir, "out", "a"), Options{Key: testKey}); err == nil {
		t.Error("Dir wrote over a full directory")
	}
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("keep me"), 0o600)
	if _, err := Dir(context.Background(), in, file, Options{Key: testKey}); err == nil {
		t.Error("Dir wrote over a file")
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Error("Dir removed a file named as its output")
	}
	if _, err := Dir(context.Background(), in, filepath.Join(dir, "short"), Options{Key: []byte("short")}); err == nil {
		t.Error("Dir took a 5-byte key")
	}
}

// TestHeaderRedacted: the header's server command is redacted with the
// same mapping as the values in the session (a path given to the server
// and the same path in a call's arguments get the same pseudonym), keeping
// the program, the flags and the package a launcher runs; an upstream URL
// keeps its scheme.
func TestHeaderRedacted(t *testing.T) {
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	const header = `{"hoist_mcp_log":2,"session":"s1","started_unix_ms":1,"server_command":["npx","-y","@modelcontextprotocol/server-filesystem","/home/alice/private-projects","--root=/srv/alice-data","<redacted>"],"domain":"fs","agent_model":null,"host_session":"h","upstream":"https://mcp.alice-corp.example/v1"}`
	const call = `{"t_ms":1,"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"/home/alice/private-projects"}}}}`
	os.WriteFile(filepath.Join(in, "s1.jsonl"), []byte(header+"\n"+call+"\n"), 0o600)
	if _, err := Dir(context.Background(), in, out, Options{Key: testKey}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"alice", "private-projects", "alice-data", "alice-corp"} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the copy keeps %q:\n%s", secret, b)
		}
	}
	lines := bytes.SplitN(b, []byte("\n"), 3)
	var h struct {
		Command  []string `json:"server_command"`
		Upstream string   `json:"upstream"`
	}
	var c struct {
		Message struct {
			Params struct {
				Arguments struct{ Path string }
			}
		}
	}
	json.Unmarshal(lines[0], &h)
	json.Unmarshal(lines[1], &c)
	if len(h.Command) != 6 || h.Command[0] != "npx" || h.Command[1] != "-y" || h.Command[2] != "@modelcontextprotocol/server-filesystem" ||
		!strings.HasPrefix(h.Command[4], "--root=/") || h.Command[5] != "<redacted>" {
		t.Errorf("server_command %q: want the program, flags, package and <redacted> kept", h.Command)
	}
	if h.Command[3] != c.Message.Params.Arguments.Path {
		t.Errorf("the path maps to %q in the header and %q in the call: one mapping for both", h.Command[3], c.Message.Params.Arguments.Path)
	}
	if !strings.HasPrefix(h.Upstream, "https://") {
		t.Errorf("upstream %q: want its scheme kept", h.Upstream)
	}
}
