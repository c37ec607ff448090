package mcplog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/klauspost/compress/zstd"
)

const testHeader = `{"hoist_mcp_log":2,"session":"s1","started_unix_ms":1790198400123,"server_command":["srv"],"domain":"orders","agent_model":null,"host_session":"host-1","future":true}`

// readString reads a log from s and returns its good entries and the
// first error Next gave.
func readString(t *testing.T, s string) ([]Entry, *Reader, error) {
	t.Helper()
	r, err := NewReader(strings.NewReader(s), "s1.jsonl")
	if err != nil {
		return nil, nil, err
	}
	var entries []Entry
	var first error
	for {
		e, err := r.Next()
		if err == io.EOF {
			return entries, r, first
		}
		if err != nil {
			if first == nil {
				first = err
			}
			if e.Bad == nil {
				return entries, r, first
			}
			continue
		}
		entries = append(entries, e)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []Entry
		wantTorn bool
	}{
		{
			name: "message bytes kept exactly",
			in: testHeader + "\n" +
				`{"t_ms":12,"from":"client","message":{"jsonrpc":"2.0", "id":3,"method":"tools/call","params":{"n":1.50}}}` + "\n" +
				`{"t_ms":14,"from":"server","raw":"Listening on stdio"}` + "\n",
			want: []Entry{
				{Line: 2, TMS: 12, From: "client", Message: json.RawMessage(`{"jsonrpc":"2.0", "id":3,"method":"tools/call","params":{"n":1.50}}`)},
				{Line: 3, TMS: 14, From: "server", Raw: "Listening on stdio"},
			},
		},
		{
			name: "unknown members kept",
			in:   testHeader + "\n" + `{"t_ms":1,"from":"proxy","message":[1, 2],"shadow":true,"why":{"a":"b"}}` + "\n",
			want: []Entry{{Line: 2, TMS: 1, From: "proxy", Message: json.RawMessage(`[1, 2]`),
				Extra: map[string]json.RawMessage{"shadow": json.RawMessage(`true`), "why": json.RawMessage(`{"a":"b"}`)}}},
		},
		{
			name: "escaped raw and keys",
			in:   testHeader + "\n" + `{"t_\u006ds":5,"from":"server","raw":"a\"b\n\ufffd"}` + "\n",
			want: []Entry{{Line: 2, TMS: 5, From: "server", Raw: "a\"b\n\ufffd"}},
		},
		{
			name:     "torn last line",
			in:       testHeader + "\n" + `{"t_ms":1,"from":"client","message":{"id":1}}` + "\n" + `{"t_ms":2,"from":"server","message":{"id":1,"res`,
			want:     []Entry{{Line: 2, TMS: 1, From: "client", Message: json.RawMessage(`{"id":1}`)}},
			wantTorn: true,
		},
		{
			// Whole JSON, but no entry yet: a line without its newline is
			// unfinished, whatever is left of it (the fuzz target's seed
			// 9b1a253d5ae8d539).
			name:     "torn last line that is whole JSON",
			in:       testHeader + "\n" + `{"t_ms":1,"from":"client","message":null}` + "\n" + `{"t_ms":2,"from":"client"}`,
			want:     []Entry{{Line: 2, TMS: 1, From: "client", Message: json.RawMessage(`null`)}},
			wantTorn: true,
		},
		{
			name:     "torn last line of spaces",
			in:       testHeader + "\n" + `{"t_ms":1,"from":"client","message":null}` + "\n  ",
			want:     []Entry{{Line: 2, TMS: 1, From: "client", Message: json.RawMessage(`null`)}},
			wantTorn: true,
		},
		{
			name: "whole last line without newline",
			in:   testHeader + "\n" + `{"t_ms":1,"from":"client","message":null}`,
			want: []Entry{{Line: 2, TMS: 1, From: "client", Message: json.RawMessage(`null`)}},
		},
		{
			name: "CRLF and blank lines",
			in:   testHeader + "\r\n\r\n" + `{"t_ms":1,"from":"client","message":{}}` + "\r\n",
			want: []Entry{{Line: 3, TMS: 1, From: "client", Message: json.RawMessage(`{}`)}},
		},
		{
			name: "header only",
			in:   testHeader,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, r, err := readString(t, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(Entry{})); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if r.Torn() != tt.wantTorn {
				t.Errorf("Torn = %v, want %v", r.Torn(), tt.wantTorn)
			}
			wantHeader := Header{Log: 2, Session: "s1", StartedUnixMS: 1790198400123, ServerCommand: []string{"srv"},
				Domain: StringOrNil("orders"), HostSession: "host-1"}
			if diff := cmp.Diff(wantHeader, r.Header()); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			if string(r.HeaderRaw()) != testHeader {
				t.Errorf("HeaderRaw = %s", r.HeaderRaw())
			}
		})
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // the whole message
		notALog bool
	}{
		{"malformed middle line", testHeader + "\n" + `{"t_ms":1,"from":"client","message":{}}` + "\n" + `{"t_ms":2,"from` + "\n" + `{"t_ms":3,"from":"client","message":{}}` + "\n",
			"s1.jsonl:3: not a JSON line", false},
		{"malformed last line with newline", testHeader + "\n" + `oops` + "\n",
			"s1.jsonl:2: not a JSON line", false},
		{"t_ms not an integer", testHeader + "\n" + `{"t_ms":"1","from":"client","message":{}}` + "\n",
			`s1.jsonl:2: t_ms: want milliseconds as an integer, got "1"`, false},
		{"from missing", testHeader + "\n" + `{"t_ms":1,"message":{}}` + "\n",
			`s1.jsonl:2: from: missing`, false},
		{"neither message nor raw", testHeader + "\n" + `{"t_ms":1,"from":"client"}` + "\n",
			`s1.jsonl:2: message: missing (and no raw)`, false},
		{"not an object", testHeader + "\n" + `[1]` + "\n",
			`s1.jsonl:2: not a JSON object`, false},
		{"empty file", "", "s1.jsonl: not a hoist-mcp session log: the file is empty", true},
		{"other JSONL", `{"role":"user","content":"hi"}` + "\n",
			"s1.jsonl:1: not a hoist-mcp session log: the first line has no hoist_mcp_log member", true},
		{"text file", "hello world\n", "s1.jsonl:1: not a hoist-mcp session log: the first line is not a hoist_mcp_log header", true},
		{"JSON array", "[1,2]\n", "s1.jsonl:1: not a hoist-mcp session log: the first line is not a JSON object", true},
		{"newer version", `{"hoist_mcp_log":3,"session":"s","started_unix_ms":1}` + "\n",
			"s1.jsonl:1: hoist_mcp_log: log format version 3 is newer than this hoist reads (2); upgrade hoist", false},
		{"bad header member", `{"hoist_mcp_log":2,"session":7}` + "\n",
			"s1.jsonl:1: session: want a string, got a JSON number", false},
		{"header without session", `{"hoist_mcp_log":2}` + "\n",
			"s1.jsonl:1: session: missing", false},
		{"header without start", `{"hoist_mcp_log":2,"session":"s"}` + "\n",
			"s1.jsonl:1: started_unix_ms: missing", false},
		{"empty session", `{"hoist_mcp_log":2,"session":"","started_unix_ms":1}` + "\n",
			"s1.jsonl:1: session: want the session's id, got an empty string", false},
		{"start of the wrong type", `{"hoist_mcp_log":2,"session":"s","started_unix_ms":"today"}` + "\n",
			"s1.jsonl:1: started_unix_ms: want the start time in Unix milliseconds, got a JSON string", false},
		{"start before 1970", `{"hoist_mcp_log":2,"session":"s","started_unix_ms":-5}` + "\n",
			"s1.jsonl:1: started_unix_ms: want the start time in Unix milliseconds, got -5", false},
		{"command of the wrong type", `{"hoist_mcp_log":2,"session":"s","started_unix_ms":1,"server_command":"npx x"}` + "\n",
			"s1.jsonl:1: server_command: want an array of strings, got a JSON string", false},
		{"names are exact", `{"hoist_mcp_log":2,"SESSION":"s","started_unix_ms":1}` + "\n",
			"s1.jsonl:1: session: missing", false},
		{"torn header", `{"hoist_mcp_log":2,"sess`, "s1.jsonl:1: the header line is torn", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readString(t, tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Errorf("error %T is not an *InputError", err)
			}
			if got := errors.Is(err, ErrNotSessionLog); got != tt.notALog {
				t.Errorf("errors.Is(err, ErrNotSessionLog) = %v, want %v", got, tt.notALog)
			}
		})
	}
}

// TestReaderGoesOnAfterMalformedLine: a bad line costs that line only,
// whether the log is plain or compressed, and what can be read of it is
// kept.
func TestReaderGoesOnAfterMalformedLine(t *testing.T) {
	in := testHeader + "\n" + `{"t_ms":1,"from":"client","message":{}}` + "\n" +
		`{"t_ms":2,"from":"server","message":{"jsonrpc":"2.0","id":5,"result":{broken}}` + "\n" +
		`{"t_ms":3,"from":"client","message":{}}` + "\n"
	var zst bytes.Buffer
	zw, _ := zstd.NewWriter(&zst)
	zw.Write([]byte(in))
	zw.Close()
	for name, data := range map[string][]byte{"x.jsonl": []byte(in), "x.jsonl.zst": zst.Bytes()} {
		t.Run(name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(data), name)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if e, err := r.Next(); err != nil || e.Line != 2 {
				t.Fatalf("line 2: %+v, %v", e, err)
			}
			e, err := r.Next()
			var ie *InputError
			if !errors.As(err, &ie) || ie.Line != 3 || e.Bad == nil || e.Line != 3 {
				t.Fatalf("line 3: %+v, %v; want an *InputError and the bad line", e, err)
			}
			if !e.Bad.HasTMS || e.TMS != 2 || e.From != "server" || string(e.Bad.ID) != "5" || !e.Bad.Response || !strings.Contains(e.Bad.Text, "{broken}") {
				t.Errorf("salvaged %+v %+v", e, e.Bad)
			}
			if e, err := r.Next(); err != nil || e.Line != 4 {
				t.Fatalf("after the bad line, Next = %+v, %v; want line 4", e, err)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("at the end Next = %v, want io.EOF", err)
			}
		})
	}
}

func TestReaderLongLine(t *testing.T) {
	big := strings.Repeat("x", 3<<20) // far past bufio.Scanner's 64 KiB
	in := testHeader + "\n" + `{"t_ms":1,"from":"server","message":{"id":1,"result":"` + big + `"}}` + "\n" +
		`{"t_ms":2,"from":"client","message":{}}` + "\n"
	got, _, err := readString(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Message) != len(big)+20 || got[1].TMS != 2 {
		t.Fatalf("got %d entries, first message %d bytes", len(got), len(got[0].Message))
	}
}

// TestReaderReadsWriter reads back what Writer wrote, byte for byte.
func TestReaderReadsWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{Log: Version, Session: "s", StartedUnixMS: 1, HostSession: "h"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"id":1, "jsonrpc":"2.0","result":{}}`, "not json \xff"}
	for _, l := range lines {
		w.Record(FromClient, []byte(l))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Entries) != 3 || log.Torn || log.Header.Session != "s" {
		t.Fatalf("read %+v", log)
	}
	if string(log.Entries[0].Message) != lines[0] || string(log.Entries[1].Message) != lines[1] {
		t.Errorf("messages changed: %s / %s", log.Entries[0].Message, log.Entries[1].Message)
	}
	if !log.Entries[2].IsRaw() || log.Entries[2].Raw != "not json \ufffd" {
		t.Errorf("raw entry = %+v", log.Entries[2])
	}
}

func TestOpenMissingFile(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.jsonl"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open of a missing file: %v", err)
	}
}

func TestInputErrorFormat(t *testing.T) {
	tests := []struct {
		e    InputError
		want string
	}{
		{InputError{File: "a.jsonl", Line: 3, Field: "t_ms", Err: errors.New("missing")}, "a.jsonl:3: t_ms: missing"},
		{InputError{File: "a.jsonl", Err: errors.New("empty")}, "a.jsonl: empty"},
		{InputError{Line: 2, Err: errors.New("x")}, "line 2: x"},
		{InputError{Field: "f"}, "f: bad input"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestReaderReadsEveryLineTheWriterWrites: a message nested as deep as
// JSON may be is recorded as a message, and the log line that wraps it, one
// level deeper, reads back (one depth rule for writer and reader).
func TestReaderReadsEveryLineTheWriterWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{Log: Version, Session: "s", StartedUnixMS: 1, HostSession: "h"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	deep := `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`
	tooDeep := `{"jsonrpc":"2.0","id":2,"result":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`
	w.Record(FromServer, []byte(deep))
	w.Record(FromServer, []byte(tooDeep))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := ReadFile(path)
	if err != nil {
		t.Fatalf("reading back what the writer wrote: %v", err)
	}
	if len(log.Entries) != 2 || string(log.Entries[0].Message) != deep {
		t.Fatalf("the message 10000 deep did not read back as a message: %d entries", len(log.Entries))
	}
	if !log.Entries[1].IsRaw() || log.Entries[1].Raw != tooDeep {
		t.Errorf("a message deeper than JSON allows should be recorded as raw text")
	}
}

// TestEntryClassify: an entry the Reader read classifies as jsonrpc does its
// message (the Reader validated it once, with the line), and an Entry built
// by hand, whose message nobody validated, is still validated.
func TestEntryClassify(t *testing.T) {
	const head = `{"hoist_mcp_log":2,"session":"s1","started_unix_ms":1}` + "\n"
	entries, _, err := readString(t, head+
		`{"t_ms":1,"from":"client","message":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a"}}}`+"\n"+
		`{"t_ms":2,"from":"server","message":[{"id":7,"result":{}},{"method":"x"}]}`+"\n")
	if err != nil || len(entries) != 2 {
		t.Fatalf("reading: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		if got, want := e.Classify(), jsonrpc.Classify(e.Message); !reflect.DeepEqual(got, want) {
			t.Errorf("line %d: Classify = %+v, jsonrpc.Classify %+v", e.Line, got, want)
		}
		if got, want := slices.Collect(e.Messages()), slices.Collect(jsonrpc.Messages(e.Message)); !reflect.DeepEqual(got, want) {
			t.Errorf("line %d: Messages = %+v, jsonrpc.Messages %+v", e.Line, got, want)
		}
		if again, want := e.Classify(), jsonrpc.Classify(e.Message); !reflect.DeepEqual(again, want) {
			t.Errorf("line %d: Classify asked again = %+v, jsonrpc.Classify %+v", e.Line, again, want)
		}
	}
	if m := entries[0].Classify(); m.Kind != jsonrpc.Request || m.Method != "tools/call" || string(m.ID) != "7" {
		t.Errorf("the request classifies as %+v", m)
	}
	byHand := Entry{Line: 2, From: FromServer, Message: json.RawMessage(`{"id":1,"result":`)}
	if m := byHand.Classify(); m.Kind != jsonrpc.NotJSON {
		t.Errorf("an unvalidated message that is not JSON classifies as %v", m.Kind)
	}
	if got := slices.Collect(byHand.Messages()); len(got) != 1 || got[0].Kind != jsonrpc.NotJSON {
		t.Errorf("Messages of an unvalidated message that is not JSON = %+v", got)
	}
}

// TestReaderCRLFLine: a wire line that ended in CRLF is recorded with its
// \r (manual, "Log format": the line as it was sent), which for a JSON line
// is whitespace after the message; it reads back as the message, and a raw
// line's text keeps it.
func TestReaderCRLFLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{Log: Version, Session: "s", StartedUnixMS: 1, HostSession: "h"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const msg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	w.Record(FromClient, []byte(msg+"\r"))
	w.Record(FromServer, []byte("not json\r"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"message":`+msg+"\r}\n")) {
		t.Errorf("the log does not hold the message's \\r:\n%q", data)
	}
	log, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Entries) != 2 || string(log.Entries[0].Message) != msg || log.Entries[1].Raw != "not json\r" {
		t.Fatalf("read back %+v", log.Entries)
	}
	if m := log.Entries[0].Classify(); m.Method != "ping" {
		t.Errorf("the CRLF line classifies as %+v", m)
	}
}
