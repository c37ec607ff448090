package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// TestReadBody: a body is read whole whether or not the request declares
// its length, and one over the limit fails as too large either way.
func TestReadBody(t *testing.T) {
	const limit = 64
	small := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name     string
		body     string
		declared bool
		tooLarge bool
	}{
		{"declared", small, true, false},
		{"chunked", small, false, false},
		{"empty", "", true, false},
		{"declared, too large", strings.Repeat("x", limit+1), true, true},
		{"chunked, too large", strings.Repeat("x", limit+1), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *http.Request
			if tc.declared {
				r = httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tc.body))
			} else {
				// No length known beforehand, as with chunked encoding.
				r = httptest.NewRequest(http.MethodPost, "/mcp", io.MultiReader(strings.NewReader(tc.body)))
				r.ContentLength = -1
			}
			got, err := readBody(httptest.NewRecorder(), r, limit)
			var mbe *http.MaxBytesError
			switch {
			case tc.tooLarge && !errors.As(err, &mbe):
				t.Fatalf("readBody = %q, %v; want a *http.MaxBytesError", got, err)
			case !tc.tooLarge && (err != nil || string(got) != tc.body):
				t.Fatalf("readBody = %q, %v; want %q", got, err, tc.body)
			}
		})
	}
}

// TestWriteEvent: events written one after another, through the buffer
// they share, each carry their own message whole, a small one after a
// large one included.
func TestWriteEvent(t *testing.T) {
	rec := httptest.NewRecorder()
	large := bytes.Repeat([]byte("y"), 100<<10)
	msgs := [][]byte{[]byte(`{"a":1}`), large, []byte(`{"b":2}`)}
	var want bytes.Buffer
	for _, m := range msgs {
		if err := writeEvent(rec, m); err != nil {
			t.Fatal(err)
		}
		want.WriteString("event: message\ndata: ")
		want.Write(m)
		want.WriteString("\n\n")
	}
	if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
		t.Errorf("events differ from the messages: got %d bytes, want %d", rec.Body.Len(), want.Len())
	}
	if !rec.Flushed {
		t.Error("events were not flushed")
	}
}

// TestWriteWithEnd: a line and its end reach the writer in one write, and
// the buffer kept between lines leaves nothing of one line in the next.
func TestWriteWithEnd(t *testing.T) {
	var w writes
	for _, line := range []string{strings.Repeat("z", 5000), "a", ""} {
		if _, err := writeWithEnd(&w, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{strings.Repeat("z", 5000) + "\n", "a\n", "\n"}
	if len(w) != len(want) {
		t.Fatalf("%d writes, want %d", len(w), len(want))
	}
	for i := range want {
		if w[i] != want[i] {
			t.Errorf("write %d = %.40q, want %.40q", i, w[i], want[i])
		}
	}
}

// writes keeps each write apart.
type writes []string

func (w *writes) Write(p []byte) (int, error) {
	*w = append(*w, string(p))
	return len(p), nil
}

// TestRequestMeta: the search that skips params without _meta gives what
// mcpmsg.ReadRequestMeta gives, for params with and without one.
func TestRequestMeta(t *testing.T) {
	for _, params := range []string{
		`{"name":"echo","arguments":{"message":"` + strings.Repeat("m", 5000) + `"}}`,
		`{"name":"echo","arguments":{"message":"a"},"_meta":{"progressToken":7}}`,
		`{"name":"echo","arguments":{"message":"_meta"},"_meta":{"progressToken":"t"}}`,
		`{"name":"echo","_met\u0061":{"progressToken":8}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{}`, ``,
	} {
		got, want := requestMeta([]byte(params)), mcpmsg.ReadRequestMeta([]byte(params))
		if string(got.ProgressToken) != string(want.ProgressToken) || got.ProtocolVersion != want.ProtocolVersion || got.ClientName != want.ClientName {
			t.Errorf("requestMeta(%.60s) = %+v, ReadRequestMeta %+v", params, got, want)
		}
	}
	if requestMeta([]byte(`{"_meta":{"progressToken":7}}`)).ProgressToken == nil {
		t.Error("requestMeta misses a progressToken")
	}
}
