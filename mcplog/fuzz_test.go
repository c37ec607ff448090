package mcplog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzReader reads any input as a session log: it never panics; what it
// reads is well formed (messages are valid JSON, lines increase); and any
// prefix of a log it reads, cut past the header, also reads, as a prefix of
// the same entries but for the line the cut went through: a torn last line
// is never an error.
func FuzzReader(f *testing.F) {
	logs, _ := filepath.Glob(filepath.Join("..", "testdata", "tau2", "logs", "*", "*", "*[0-9].jsonl"))
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint16(len(data)/3))
		// The first lines alone: small seeds make mutations count.
		lines := bytes.SplitAfter(data, []byte("\n"))
		f.Add(bytes.Join(lines[:min(len(lines), 4)], nil), uint16(100))
	}
	for _, s := range []string{
		testHeader + "\n" + `{"t_ms":1,"from":"client","message":{"id":1}}` + "\n" + `{"t_ms":2,"from":"server","raw":"x\u00e9"}`,
		testHeader + "\r\n\r\n" + `{"t_ms":1,"from":"proxy","message":[1,{"a":"}"}],"x":null}` + "\n",
		`{"hoist_mcp_log":2}` + "\n" + `{"t_ms":1e3,"from":"c","message":1}`,
		`{"hoist_mcp_log":"2"}`, "", "\n", "[]", `{"t_ms":1}`,
		// A bad line before the cut: its entry carries an *InputError.
		testHeader + "\n" + `{"t_ms":1,"from":"client"}` + "\n" + `{"t_ms":2,"from":"server","raw":"x"}` + "\n",
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		entries, ok := readAll(t, data)
		if !ok {
			return
		}
		for i, e := range entries {
			if e.Message != nil && !json.Valid(e.Message) {
				t.Fatalf("entry %d: message %q is not valid JSON", i, e.Message)
			}
			if i > 0 && e.Line <= entries[i-1].Line {
				t.Fatalf("entry %d: line %d after line %d", i, e.Line, entries[i-1].Line)
			}
		}
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return
		}
		at := nl + 1 + int(cut)%(len(data)-nl)
		prefix := data[:at]
		got, ok := readAll(t, prefix)
		if !ok {
			t.Fatalf("a prefix of %d bytes of a readable log does not read", at)
		}
		// The lines the cut left whole read as they do in the whole log.
		// The line it went through, when it went through one, is the
		// prefix's torn last line: read when what is left of it is an
		// entry (which the whole line may not be), else skipped, never a
		// bad line.
		cutLine := bytes.Count(prefix, []byte("\n")) + 1
		before := func(es []Entry) []Entry {
			n := 0
			for n < len(es) && es[n].Line < cutLine {
				n++
			}
			return es[:n]
		}
		whole, kept := before(entries), before(got)
		if diff := cmp.Diff(whole, kept, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Entry{}), sameError); diff != "" {
			t.Fatalf("prefix entries differ (-whole +prefix):\n%s", diff)
		}
		if extra := len(got) - len(kept); extra > 1 || extra == 1 && prefix[len(prefix)-1] == '\n' {
			t.Fatalf("prefix read %d entries past line %d, where it was cut", extra, cutLine-1)
		} else if extra == 1 && got[len(got)-1].Bad != nil {
			t.Fatalf("the torn last line of a prefix of %d bytes read as a bad line: %v", at, got[len(got)-1].Bad.Err)
		}
	})
}

// sameError compares a bad line's errors by what they say: the errors
// inside an *InputError are the standard library's, whose fields cmp cannot
// see.
var sameError = cmp.Comparer(func(a, b *InputError) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
})

func readAll(t *testing.T, data []byte) ([]Entry, bool) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), "fuzz.jsonl")
	if err != nil {
		return nil, false
	}
	entries, err := r.ReadAll()
	return entries, err == nil
}
