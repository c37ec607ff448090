package mcplog

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
			if diff := cmp.Diff(want.Entries, got.Entries, cmpopts.IgnoreUnexported(Entry{})); diff != "" {
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

// TestReaderAfterClose: a Reader gives its buffer back when closed, so a
// Next after Close must fail rather than read through a buffer another
// Reader may hold by then; closing twice is harmless.
func TestReaderAfterClose(t *testing.T) {
	const log = `{"hoist_mcp_log":2,"session":"s1","started_unix_ms":1}` + "\n" +
		`{"t_ms":1,"from":"client","message":{"id":1,"method":"a"}}` + "\n" +
		`{"t_ms":2,"from":"client","message":{"id":2,"method":"b"}}` + "\n"
	for _, compressed := range []bool{false, true} {
		in := []byte(log)
		if compressed {
			var buf bytes.Buffer
			zw, _ := zstd.NewWriter(&buf)
			zw.Write(in)
			zw.Close()
			in = buf.Bytes()
		}
		r, err := NewReader(bytes.NewReader(in), "s1.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if e, err := r.Next(); err != nil || e.Line != 2 {
			t.Fatalf("compressed=%v: first entry: line %d, %v", compressed, e.Line, err)
		}
		r.Close()
		other, err := NewReader(strings.NewReader(log), "other.jsonl") // may take the buffer
		if err != nil {
			t.Fatal(err)
		}
		if e, err := r.Next(); err == nil || err == io.EOF {
			t.Errorf("compressed=%v: Next after Close = line %d, %v; want an error", compressed, e.Line, err)
		}
		if e, err := other.Next(); err != nil || e.Line != 2 || string(e.Message) != `{"id":1,"method":"a"}` {
			t.Errorf("compressed=%v: the next Reader reads line %d %s, %v", compressed, e.Line, e.Message, err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		other.Close()
	}
}
