package proxy

import (
	"io"
	"strings"
	"testing"
)

// TestSSELineEnds: an event stream's lines end at LF, CRLF or a lone CR
// (the WHATWG rules), and a CRLF split between two reads is one line end.
func TestSSELineEnds(t *testing.T) {
	for name, stream := range map[string]string{
		"LF":    "event: message\ndata: {\"a\":1}\n\ndata: {\"b\":2}\n\n",
		"CRLF":  "event: message\r\ndata: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\n\r\n",
		"CR":    "event: message\rdata: {\"a\":1}\r\rdata: {\"b\":2}\r\r",
		"mixed": ": keep-alive\r\nevent: message\rdata: {\"a\":1}\n\r\ndata: {\"b\":2}\r\r",
	} {
		t.Run(name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(stream), &oneByte{s: stream}} {
				sr := newSSEReader(r, 1<<20)
				var got []string
				for {
					ev, err := sr.next()
					if err != nil {
						break
					}
					got = append(got, string(ev.Data))
				}
				if strings.Join(got, " ") != `{"a":1} {"b":2}` {
					t.Errorf("%T: events %q", r, got)
				}
			}
		})
	}
}

// oneByte reads one byte at a time.
type oneByte struct{ s string }

func (o *oneByte) Read(p []byte) (int, error) {
	if o.s == "" {
		return 0, io.EOF
	}
	p[0], o.s = o.s[0], o.s[1:]
	return 1, nil
}
