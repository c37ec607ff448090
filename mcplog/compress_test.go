package mcplog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"
)

func TestReadFileZstd(t *testing.T) {
	plain := testHeader + "\n" + `{"t_ms":1,"from":"client","message":{"id":1, "method":"ping"}}` + "\n" +
		`{"t_ms":2,"from":"server","raw":"` + strings.Repeat("log line ", 20000) + `"}` + "\n" + `{"t_ms":3,"from":"ser`
	dir := t.TempDir()
	plainPath := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(plainPath, []byte(plain), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	packed := enc.EncodeAll([]byte(plain), nil)
	enc.Close()
	want, err := ReadFile(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s.jsonl.zst", "s-renamed.jsonl"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, packed, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Entries, got.Entries); diff != "" {
				t.Errorf("entries (-plain +zstd):\n%s", diff)
			}
			if !got.Torn || !cmp.Equal(got.Header, want.Header) {
				t.Errorf("torn %v header %+v", got.Torn, got.Header)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		path := filepath.Join(dir, "bad.jsonl.zst")
		bad := append([]byte(nil), packed[:len(packed)/2]...)
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadFile of a cut .zst: %v, want an error naming the file", err)
		}
	})
}
