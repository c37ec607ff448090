package console_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hoist-mcp/hoist/console/hold"
)

// fakeProxy plays hoist-mcp --console's end of the attach protocol
// (docs/console.md, "Holding a frame"), for the page's own rules: it
// attaches, sends held frames, and turns each verdict into what the host
// would receive with hold.Decide. TestConsoleHoldsProxy drives the real
// proxy.
type fakeProxy struct {
	w     *io.PipeWriter
	lines chan map[string]json.RawMessage
}

func attachProxy(t *testing.T, base string) *fakeProxy {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", base+"/hold/attach", pr)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProxy{w: pw, lines: make(chan map[string]json.RawMessage, 16)}
	resp := make(chan error, 1)
	go func() {
		r, err := http.DefaultClient.Do(req)
		resp <- err
		if err != nil {
			close(p.lines)
			return
		}
		defer r.Body.Close()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.lines <- m
			}
		}
		close(p.lines)
	}()
	if err := <-resp; err != nil {
		t.Fatalf("attaching: %v", err)
	}
	t.Cleanup(func() { pw.Close() })
	return p
}

func (p *fakeProxy) send(t *testing.T, format string, args ...any) {
	t.Helper()
	if _, err := fmt.Fprintf(p.w, format+"\n", args...); err != nil {
		t.Fatal(err)
	}
}

// next returns the console's next line of the type typ.
func (p *fakeProxy) next(t *testing.T, typ string) map[string]json.RawMessage {
	t.Helper()
	for m := range p.lines {
		if string(m["type"]) == `"`+typ+`"` {
			return m
		}
	}
	t.Fatalf("the console detached the proxy before a %s line", typ)
	return nil
}

// hostGets is what the host receives for a held tools/call request with id 7,
// given the console's verdict.
func hostGets(t *testing.T, v map[string]json.RawMessage) (hold.Verdict, string) {
	t.Helper()
	var act string
	json.Unmarshal(v["action"], &act)
	a, err := hold.ParseAction(act)
	if err != nil {
		t.Fatal(err)
	}
	got, err := hold.Decide(hold.Before, a, []byte(`7`), "tools/call", v["value"], false)
	if err != nil {
		t.Fatal(err)
	}
	return got, string(got.Line)
}

// A person holds, injects, aborts and continues frames through the page
// (issue 15, point 3), and what the host would receive is exactly the
// frame each action makes.
func TestConsoleHolds(t *testing.T) {
	ctx := browser(t)
	base := "http://" + startConsole(t, "--sessions", t.TempDir(), "--poll", "50ms")
	p := attachProxy(t, base)
	if bp := p.next(t, "breakpoints"); string(bp["loop"]) != "true" {
		t.Errorf("the first breakpoints: loop %s, want the loop hold on", bp["loop"])
	}
	p.send(t, `{"type":"hello","session":"s-1","server":"retail"}`)
	held := func(n int) {
		p.send(t, `{"type":"held","n":%d,"point":"before","id":7,"method":"tools/call","why":"breakpoint","frame":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W%d"}}}}`, n, n)
	}

	held(1)
	within(t, ctx, "injecting into the first frame",
		chromedp.Navigate(base+"/holds"),
		visible(`form.held[data-n="1"]`),
		chromedp.SendKeys(chromedp.CSS(`form.held[data-n="1"] textarea`), "the order is on its way"),
		chromedp.Click(chromedp.CSS(`form.held[data-n="1"] button[value=inject]`)),
		// The page swaps in the list without the frame: "nothing held".
		visible(`section.proxy p.empty`),
	)
	v, line := hostGets(t, p.next(t, "verdict"))
	if want := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"the order is on its way"}]}}`; !v.Answer || line != want {
		t.Errorf("inject: the host gets %s (answer %v), want %s", line, v.Answer, want)
	}

	held(2)
	within(t, ctx, "aborting the second frame",
		visible(`form.held[data-n="2"]`),
		chromedp.Click(chromedp.CSS(`form.held[data-n="2"] button[value=abort]`)),
		visible(`section.proxy p.empty`),
	)
	v, line = hostGets(t, p.next(t, "verdict"))
	if want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32099,"message":"aborted from the hoist console"}}`; !v.Answer || line != want {
		t.Errorf("abort: the host gets %s, want %s", line, want)
	}

	held(3)
	within(t, ctx, "continuing the third frame",
		visible(`form.held[data-n="3"]`),
		chromedp.Click(chromedp.CSS(`form.held[data-n="3"] button[value=continue]`)),
		visible(`section.proxy p.empty`),
	)
	if v, line = hostGets(t, p.next(t, "verdict")); !v.Forward || line != "" {
		t.Errorf("continue: %+v, want the frame forwarded as it is", v)
	}

	within(t, ctx, "setting a breakpoint",
		chromedp.SendKeys(chromedp.CSS(`input[name=tools]`), "cancel_pending_order"),
		chromedp.Click(chromedp.CSS(`form[action="/holds/breakpoints"] button`)),
		visible(`input[name=tools][value="cancel_pending_order"]`),
	)
	if bp := p.next(t, "breakpoints"); string(bp["tools"]) != `["cancel_pending_order"]` {
		t.Errorf("breakpoints sent: tools %s", bp["tools"])
	}
	held(4)
	within(t, ctx, "a frame held", visible(`form.held[data-n="4"]`))
	shoot(t, ctx, "holds")

	// The proxy detaches mid-hold: it continues what it held by itself
	// (fail-open), and the page forgets it.
	p.w.Close()
	within(t, ctx, "the proxy gone from the page", visible(`main#holds > p.empty`))
}
