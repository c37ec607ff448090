package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// A change that lands after the console drew a page but before the page's
// event stream is open still reaches the page: the stream's first open
// makes the page read itself again. The test holds the page's /events
// request in the browser, holds a frame meanwhile, and only then lets the
// stream through.
func TestPageCatchesUpOnChangesBeforeItsStream(t *testing.T) {
	ctx := browser(t)
	addr := startConsole(t, "--sessions", t.TempDir(), "--poll", "50ms")
	base := "http://" + addr
	cc := newConsoleClient(addr)
	ev := cc.events(t)
	p := attachProxy(t, base)
	p.next(t, "breakpoints")
	p.send(t, `{"type":"hello","session":"s-1","server":"retail"}`)

	paused := make(chan fetch.RequestID, 4)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok && strings.HasSuffix(e.Request.URL, "/events") {
			select {
			case paused <- e.RequestID:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/events"}}}); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "the Holds page with nothing held", chromedp.Navigate(base+"/holds"), visible(`section.proxy p.empty`))

	wait, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var id fetch.RequestID
	select {
	case id = <-paused:
	case <-wait.Done():
		t.Fatal("the page never asked for its event stream")
	}

	p.send(t, `{"type":"held","n":1,"point":"before","id":7,"method":"tools/call","why":"breakpoint","frame":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W1"}}}}`)
	cc.waitHolds(t, ev, `data-n="1"`)

	if _, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id}); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "the frame held before the page's stream opened", visible(`form.held[data-n="1"]`))
}
