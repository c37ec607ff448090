package proxy_test

import (
	"net"
	"strings"
	"testing"
)

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// With --console and no console there, the proxy relays as it would
// without, holding nothing (not even the loop hold's third call), says at
// most once that it is not attached (the session may end before it has
// tried), and exits with the server.
func TestConsoleNotThere(t *testing.T) {
	nobody := closedAddr(t)
	cmd, env := fake("echo")
	p := startProxy(t, env, append([]string{"--console", nobody, "--"}, cmd...)...)
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W1"}}}` + "\n"
	for range 3 { // the loop hold's run, which holds nothing unattached
		p.send(line)
		if got := p.readLine(); got != line {
			t.Fatalf("the host got %q, want the line echoed %q", got, line)
		}
	}
	rest, code := p.finish()
	if rest != "" || code != 0 {
		t.Fatalf("after the calls: %q, exit %d", rest, code)
	}
	said := p.stderr.String()
	if n := strings.Count(said, "console: not attached to "+nobody); n > 1 || strings.Contains(said, "console: attached") || strings.Contains(said, "console: holding") {
		t.Errorf("the proxy's stderr, with no console there:\n%s", said)
	}
}
