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
			var got, bad, kept []int
			for _, e := range rl.log.Entries {
				if e.Bad != nil {
					kept = append(kept, e.Line)
					continue
				}
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
			if rl.size != int64(len(text)) || rl.log.Torn != tc.torn || !cmp.Equal(kept, tc.wantBad) {
				t.Errorf("size %d of %d, torn %v, bad lines kept %v", rl.size, len(text), rl.log.Torn, kept)
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
		last, bad := 1, 0
		for _, e := range rl.log.Entries {
			if e.Line <= last {
				t.Fatalf("line %d after line %d", e.Line, last)
			}
			last = e.Line
			if e.Bad != nil {
				if e.Bad.Err != rl.malformed[bad] || e.Bad.Err.Line != e.Line {
					t.Fatalf("bad line %d: its problem is %v", e.Line, e.Bad.Err)
				}
				bad++
			}
		}
		if bad != len(rl.malformed) {
			t.Fatalf("%d bad lines, %d problems", bad, len(rl.malformed))
		}
		if rl.size != int64(len(data)) {
			t.Fatalf("hashed %d bytes of %d", rl.size, len(data))
		}
	})
}
