package recording

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDiff compares the shop's recording with itself and with a copy whose
// calls and answers were edited: arguments, a text holding JSON, a member
// with an odd name, an answer turned into an error, a call made in one only.
func TestDiff(t *testing.T) {
	a := readSessions(t, "testdata/shop.jsonl")
	if r := Diff(a, a); !r.Same() || r.CallsA != 4 || r.CallsB != 4 {
		t.Errorf("a recording against itself: %+v", r)
	}
	b, _ := os.ReadFile("testdata/shop.jsonl")
	edited := strings.NewReplacer(
		`"arguments":{"id":"#W1","verbose":true}}}}`, `"arguments":{"id":"#W1","verbose":false,"a b":1}}}}`,
		`"text":"pending"`, `"text":"{\"status\":\"pending\",\"n\":[1,2]}"`,
		`"result":{"content":[{"type":"text","text":"cancelled"}],"isError":false}}}`+"\n"+`{"t_ms":30`,
		`"error":{"code":-1,"message":"down"}}}`+"\n"+`{"t_ms":30`,
	).Replace(string(b))
	edited += `{"t_ms":60,"from":"client","message":{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"refund","arguments":{"id":"#W1"}}}}` + "\n"
	path := filepath.Join(t.TempDir(), "edited.jsonl")
	os.WriteFile(path, []byte(edited), 0o600)
	r := Diff(a, readSessions(t, path))
	want := []CallDiff{
		{Tool: "get_order", N: 1, A: "testdata/shop.jsonl:7", B: path + ":7", Changes: []Change{
			{Path: `arguments["a b"]`, B: json.RawMessage(`1`)},
			{Path: "arguments.verbose", A: json.RawMessage(`true`), B: json.RawMessage(`false`)},
			{Path: "result.content[0].text", A: json.RawMessage(`"pending"`), B: json.RawMessage(`"{\"status\":\"pending\",\"n\":[1,2]}"`)},
		}},
		{Tool: "cancel", N: 1, A: "testdata/shop.jsonl:9", B: path + ":9", Changes: []Change{
			{Path: "result", A: json.RawMessage(`{"content":[{"text":"cancelled","type":"text"}],"isError":false}`)},
			{Path: "error", B: json.RawMessage(`{"code":-1,"message":"down"}`)},
		}},
		{Tool: "refund", N: 1, B: path + ":17", Only: "b", Arguments: json.RawMessage(`{"id":"#W1"}`)},
	}
	if diff := cmp.Diff(want, r.Calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestIgnore(t *testing.T) {
	ig := compileIgnore([]string{"result.content[*].text.updated_at", "get_order:arguments.verbose", "error", "*.trace"})
	for path, want := range map[string]bool{
		"result.content[0].text.updated_at":      true,
		"result.content[12].text.updated_at.day": true,
		"result.content[0].text.updated_at_utc":  false,
		"result.content[x].text.updated_at":      false,
		"arguments.verbose":                      true,
		"error":                                  true,
		"error.message":                          true,
		"errors":                                 false,
		"result.trace":                           true,
		"result.content[0].trace":                false,
	} {
		if got := ig("get_order", path); got != want {
			t.Errorf("%s: ignored %v, want %v", path, got, want)
		}
	}
	if ig("cancel", "arguments.verbose") {
		t.Error("a pattern for get_order ignored cancel's argument")
	}
}
