package recording

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/mcplog"
)

func readSessions(t testing.TB, paths ...string) []*Session {
	t.Helper()
	ss, err := ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func TestFromLog(t *testing.T) {
	s := readSessions(t, "testdata/shop.jsonl")[0]
	var got []string
	for _, x := range s.Exchanges {
		got = append(got, strings.Join([]string{x.Where(), x.From, x.Method, x.Tool, x.AnsweredBy}, " "))
	}
	want := []string{
		"testdata/shop.jsonl:2 client initialize  server",
		"testdata/shop.jsonl:5 client tools/list  server",
		"testdata/shop.jsonl:7 client tools/call get_order server",
		"testdata/shop.jsonl:9 client tools/call cancel server",
		"testdata/shop.jsonl:11 client tools/call get_order server",
		"testdata/shop.jsonl:13 client tools/call cancel proxy",
		"testdata/shop.jsonl:15 proxy tools/call get_order server",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
}

// TestReplayAnswers drives a Replayer line by line: recorded answers come
// back byte for byte with the new id, repeated calls get their answers in
// order, a loose match is noted, and a call with no match names the nearest.
func TestReplayAnswers(t *testing.T) {
	r := NewReplayer(readSessions(t, "testdata/shop.jsonl"))
	for _, tc := range []struct {
		name, line, want, note string
	}{
		{"initialize, another client", `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"other"}}}`,
			`{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"shop","version":"7"}}}`, ""},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", ""},
		{"tools/list with _meta", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"get_order","inputSchema":{"type":"object"}},{"name":"cancel","inputSchema":{"type":"object"}}]}}`, ""},
		{"first read, members reordered", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_order","arguments":{"verbose":true,"id":"#W1"}}}`,
			`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"pending"}],"isError":false}}`, ""},
		{"cancel, loosely equal", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"cancel","arguments":{"id":"#W1","reason":" no longer  needed","note":null}}}`,
			`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"cancelled"}],"isError":false}}`,
			`cancel {"id":"#W1","note":null,"reason":" no longer  needed"} answered as the loosely equal call at testdata/shop.jsonl:9`},
		{"second read", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_order","arguments":{"id":"#W1","verbose":true}}}`,
			`{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"cancelled"}],"isError":false}}`, ""},
		{"third read repeats the last", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"get_order","arguments":{"id":"#W1","verbose":true}}}`,
			`{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"cancelled"}],"isError":false}}`, ""},
		{"the proxy's lookup, a recorded error", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"get_order","arguments":{"id":"#W2"}}}`,
			`{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"no such order"}}`, ""},
		{"no match", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"get_order","arguments":{"id":"#W9","verbose":true}}}`,
			`{"jsonrpc":"2.0","id":13,"result":{"content":[{"text":"no recorded call of get_order with arguments {\"id\":\"#W9\",\"verbose\":true}; the nearest recorded call is get_order {\"id\":\"#W1\",\"verbose\":true} (testdata/shop.jsonl:7), which differs in id","type":"text"}],"isError":true}}`,
			`no recorded call of get_order with arguments {"id":"#W9","verbose":true}; the nearest recorded call is get_order {"id":"#W1","verbose":true} (testdata/shop.jsonl:7), which differs in id`},
		{"the guard's refusal is not the server's", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"cancel","arguments":{"id":"#W2","reason":"ordered by mistake"}}}`,
			`{"jsonrpc":"2.0","id":14,"result":{"content":[{"text":"no recorded call of cancel with arguments {\"id\":\"#W2\",\"reason\":\"ordered by mistake\"}; the nearest recorded call is cancel {\"id\":\"#W1\",\"reason\":\"No longer needed\"} (testdata/shop.jsonl:9), which differs in id, reason","type":"text"}],"isError":true}}`,
			`no recorded call of cancel with arguments {"id":"#W2","reason":"ordered by mistake"}; the nearest recorded call is cancel {"id":"#W1","reason":"No longer needed"} (testdata/shop.jsonl:9), which differs in id, reason`},
		{"an unknown tool", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"refund","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":15,"result":{"content":[{"text":"no recorded call of refund: the recordings call get_order, cancel","type":"text"}],"isError":true}}`,
			`no recorded call of refund: the recordings call get_order, cancel`},
		{"ping, unrecorded", `{"jsonrpc":"2.0","id":16,"method":"ping"}`, `{"jsonrpc":"2.0","id":16,"result":{}}`, ""},
		{"another method", `{"jsonrpc":"2.0","id":17,"method":"resources/list"}`,
			`{"jsonrpc":"2.0","id":17,"error":{"code":-32601,"message":"no recorded request of method resources/list"}}`, "no recorded request of method resources/list"},
		{"not JSON", `hello`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := r.Answer([]byte(tc.line))
			if string(got) != tc.want || note != tc.note {
				t.Errorf("answer\n %s\nnote %q\nwant\n %s\nnote %q", got, note, tc.want, tc.note)
			}
		})
	}
}

// TestServeDeterministic: the same requests against the same recordings
// give the same bytes, run after run.
func TestServeDeterministic(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_order","arguments":{"id":"#W1","verbose":true}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_order","arguments":{"id":"#W1","verbose":true}}}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]`,
	}, "\n") + "\n"
	var first string
	for i := range 3 {
		var out bytes.Buffer
		r := NewReplayer(readSessions(t, "testdata/shop.jsonl"))
		if err := r.Serve(context.Background(), strings.NewReader(in), &out, nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out.String()
			if n := strings.Count(first, "\n"); n != 4 || !strings.Contains(first, `"text":"pending"`) || !strings.Contains(first, `[{"jsonrpc":"2.0","id":4,"result":{}}]`) {
				t.Fatalf("answers:\n%s", first)
			}
		} else if out.String() != first {
			t.Errorf("run %d answered differently:\n%s", i, cmp.Diff(first, out.String()))
		}
	}
}

// TestReadFilesBadLine: a log with a bad line is refused, naming file:line.
func TestReadFilesBadLine(t *testing.T) {
	_, err := ReadFiles([]string{"../testdata/sessions/bad/20260923T220000.000Z-201.jsonl"})
	var ie *mcplog.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "20260923T220000.000Z-201.jsonl:5: ") {
		t.Errorf("err %v, want an InputError naming line 5", err)
	}
}

// FuzzAnswer: whatever line comes in, the Replayer does not panic, and
// what it answers is valid JSON.
func FuzzAnswer(f *testing.F) {
	ss := readSessions(f, "testdata/shop.jsonl")
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order","arguments":{"id":"#W1","verbose":true}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"_meta":{}}}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"cancel","arguments":[1,null]}}`,
		"not json",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r := NewReplayer(ss)
		if a, _ := r.Answer(line); a != nil && !json.Valid(a) {
			t.Fatalf("answered %q with %s", line, a)
		}
	})
}
