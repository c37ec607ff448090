package proxy

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/jsonrpc"
)

// TestPumpStartPeek: the check at the start of a line sees its first bytes
// only, however long the line, and still tells a large JSON-RPC answer from
// a server's log line; every line is forwarded and recorded whole.
func TestPumpStartPeek(t *testing.T) {
	big := `{"result":{"content":[{"type":"text","text":"` + strings.Repeat("e", readBufSize+50<<10) + `"}]},"jsonrpc":"2.0","id":7}`
	in := big + "\n" + "server listening on :8080\n" + `{"jsonrpc":"2.0","id":8,"result":{}}` + "\n"
	for _, tc := range []struct {
		name      string
		src       func() io.Reader
		intercept bool
	}{
		{"one read", func() io.Reader { return strings.NewReader(in) }, false},
		{"reads of 1000 bytes", func() io.Reader { return &smallReads{s: in, n: 1000} }, false},
		{"intercepted", func() io.Reader { return strings.NewReader(in) }, true},
	} {
		intercept := tc.intercept
		var out bytes.Buffer
		var starts []string
		var lines []string
		p := &pump{
			src:      tc.src(),
			dst:      &out,
			maxFrame: 1 << 20,
			keep:     true,
			onStart:  func(first []byte) { starts = append(starts, string(first)) },
			onLine:   func(line []byte) { lines = append(lines, string(line)) },
		}
		if intercept {
			p.intercept = func([]byte) bool { return false }
		}
		if err := p.run(); err != nil {
			t.Fatal(err)
		}
		if out.String() != in {
			t.Errorf("%s: forwarded %d bytes, want the %d sent", tc.name, out.Len(), len(in))
		}
		if strings.Join(lines, "") != in || len(lines) != 3 {
			t.Errorf("%s: %d lines recorded, want 3 whole", tc.name, len(lines))
		}
		if len(starts) != 3 {
			t.Fatalf("%s: onStart called %d times, want 3", tc.name, len(starts))
		}
		if len(starts[0]) > startPeek {
			t.Errorf("%s: onStart saw %d bytes of a line, want at most %d", tc.name, len(starts[0]), startPeek)
		}
		looks := []bool{jsonrpc.LooksLikeMessage([]byte(starts[0])), jsonrpc.LooksLikeMessage([]byte(starts[1])), jsonrpc.LooksLikeMessage([]byte(starts[2]))}
		if !looks[0] || looks[1] || !looks[2] {
			t.Errorf("%s: LooksLikeMessage of the starts = %v, want [true false true]", tc.name, looks)
		}
	}
}

// TestPumpOneWritePerRead: the lines of one read are forwarded in one
// write, each recorded before it.
func TestPumpOneWritePerRead(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":3,`
	var w writes
	var recorded []string
	p := &pump{
		src:      strings.NewReader(in),
		dst:      &w,
		maxFrame: 1 << 20,
		keep:     true,
		onLine: func(line []byte) {
			// A torn last line is recorded at the end, its bytes forwarded
			// as they came; a complete one before its bytes go.
			if bytes.HasSuffix(line, []byte("\n")) && len(w) != 0 {
				t.Errorf("line %.30q recorded after a write", line)
			}
			recorded = append(recorded, string(line))
		},
	}
	if err := p.run(); err != nil {
		t.Fatal(err)
	}
	if len(w) != 1 || w[0] != in {
		t.Errorf("writes %q, want the one read in one write", w)
	}
	if len(recorded) != 3 || strings.Join(recorded, "") != in {
		t.Errorf("recorded %q, want the two lines and the torn last one", recorded)
	}
}

// smallReads returns at most n bytes a read.
type smallReads struct {
	s string
	n int
}

func (r *smallReads) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[k:]
	return k, nil
}
