package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadWholeGoesOnAfterMalformedLines(t *testing.T) {
	const header = `{"hoist_mcp_log":2,"session":"s","started_unix_ms":1,"server_command":[],"domain":null,"agent_model":null,"host_session":"h"}`
	line := func(ms string) string {
		return `{"t_ms":` + ms + `,"from":"client","message":{"jsonrpc":"2.0","method":"notifications/initialized"}}`
	}
	for _, tc := range []struct {
		name      string
		lines     []string
		wantLines []int // entries read, by file line
		wantBad   []int
		torn      bool
	}{
		{"clean", []string{line("1"), line("2")}, []int{2, 3}, nil, false},
		{"middle", []string{line("1"), `{"t_ms":"x","from":"client","raw":"r"}`, line("3")}, []int{2, 4}, []int{3}, false},
		{"two in a row", []string{line("1"), `not json`, `{"from":"client","raw":"no time"}`, line("4")}, []int{2, 5}, []int{3, 4}, false},
		{"last", []string{line("1"), `[1,2]`}, []int{2}, []int{3}, false},
		{"blank lines", []string{line("1"), ``, `nope`, ``, line("5")}, []int{2, 6}, []int{4}, false},
		{"torn last", []string{line("1"), `{"t_ms":2,"from":"cli`}, []int{2}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			text := header + "\n" + strings.Join(tc.lines, "\n")
			if !tc.torn {
				text += "\n"
			}
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			rl, err := readWhole(path)
			if err != nil {
				t.Fatal(err)
			}
			var got, bad []int
			for _, e := range rl.log.Entries {
				got = append(got, e.Line)
			}
			for _, ie := range rl.malformed {
				bad = append(bad, ie.Line)
				if ie.File != path {
					t.Errorf("error names %q", ie.File)
				}
			}
			if diff := cmp.Diff(tc.wantLines, got); diff != "" {
				t.Errorf("entries by line: %s", diff)
			}
			if diff := cmp.Diff(tc.wantBad, bad); diff != "" {
				t.Errorf("malformed lines: %s", diff)
			}
			if rl.size != int64(len(text)) || rl.log.Torn != tc.torn || len(rl.bad) != len(tc.wantBad) {
				t.Errorf("size %d of %d, torn %v, bad lines kept %d", rl.size, len(text), rl.log.Torn, len(rl.bad))
			}
		})
	}
}

// FuzzReadWhole checks that reading on after malformed lines never panics,
// loses its place or reads a line twice: entries and malformed lines come in
// strictly increasing line order, and the whole file is hashed.
func FuzzReadWhole(f *testing.F) {
	for _, p := range []string{"sessions/bad/20260923T220000.000Z-201.jsonl", "sessions/support/20260923T212000.000Z-101.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rl, err := readWhole(path)
		if err != nil {
			return
		}
		last := 1
		ei, bi := 0, 0
		for ei < len(rl.log.Entries) || bi < len(rl.malformed) {
			var n int
			if bi >= len(rl.malformed) || (ei < len(rl.log.Entries) && rl.log.Entries[ei].Line < rl.malformed[bi].Line) {
				n = rl.log.Entries[ei].Line
				ei++
			} else {
				n = rl.malformed[bi].Line
				bi++
			}
			if n <= last {
				t.Fatalf("line %d after line %d", n, last)
			}
			last = n
		}
		if rl.size != int64(len(data)) {
			t.Fatalf("hashed %d bytes of %d", rl.size, len(data))
		}
	})
}
