package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// elsewhere is a page on another loopback origin that tries what a page
// the user visits could try on the console at base: frame its Holds page,
// and continue held frame 1 by a background post and by a form's.
const elsewhere = `<!doctype html><html><head><title>elsewhere</title></head><body>
<iframe id="c" src="%[1]s/holds" width="800" height="400"></iframe>
<form id="f" method="post" action="%[1]s/holds/verdict">
<input name="proxy" value="1"><input name="n" value="1"><input name="action" value="continue">
</form>
<script>
document.getElementById("c").addEventListener("load", function () { document.body.dataset.framed = "loaded"; });
function post() {
  return fetch("%[1]s/holds/verdict", { method: "POST", mode: "no-cors", credentials: "include",
    body: new URLSearchParams("proxy=1&n=1&action=continue") })
    .then(function () { return "sent"; }, function (e) { return "failed: " + e; });
}
</script>
</body></html>`

// A page on another loopback origin cannot frame the console, nor continue
// a held frame by its own post or form (issue 25, point 4); the console's
// own forms still decide it.
func TestConsoleNotFramedNorPostedFromElsewhere(t *testing.T) {
	ctx := browser(t)
	base := "http://" + startConsole(t, "--sessions", t.TempDir(), "--poll", "50ms")
	p := attachProxy(t, base)
	p.next(t, "breakpoints")
	p.send(t, `{"type":"hello","session":"s-1","server":"retail"}`)
	p.send(t, `{"type":"held","n":1,"point":"before","id":7,"method":"tools/call","why":"breakpoint","frame":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W1","reason":"no longer needed"}}}}`)

	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, elsewhere, base)
	}))
	t.Cleanup(other.Close)
	if strings.TrimPrefix(other.URL, "http://") == strings.TrimPrefix(base, "http://") {
		t.Fatal("the other page has the console's origin")
	}

	// The console as a person sees it: the frame is held.
	within(t, ctx, "the held frame on the Holds page", chromedp.Navigate(base+"/holds"), visible(`form.held[data-n="1"]`))

	var sent string
	within(t, ctx, "the other page",
		chromedp.Navigate(other.URL),
		chromedp.Poll[chromedp.Void](`document.body.dataset.framed === "loaded"`, chromedp.WithPollingTimeout(0)),
		into(chromedp.Evaluate[string](`post()`, chromedp.EvalAwaitPromise), &sent),
	)
	if sent != "sent" {
		t.Errorf("the other page's post: %s", sent)
	}
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.FrameTree.ChildFrames) != 1 {
		t.Fatalf("the other page has %d frames, want its one", len(tree.FrameTree.ChildFrames))
	}
	if f := tree.FrameTree.ChildFrames[0].Frame; strings.HasPrefix(f.URL, base) {
		t.Errorf("the console loaded in another origin's frame (%s)", f.URL)
	} else {
		t.Logf("the other page's frame: %s (could not load %s)", f.URL, f.UnreachableURL)
	}

	fctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	resp, err := chromedp.RunResponse(fctx, eval(`(() => { setTimeout(() => document.getElementById("f").submit()); return true })()`, new(bool)))
	cancel()
	if err != nil {
		t.Fatalf("the other page's form: %v", err)
	}
	var body string
	within(t, ctx, "the answer to the other page's form", eval(`document.body.innerText`, &body))
	if resp.Status != http.StatusForbidden || !strings.Contains(body, "forbidden") {
		t.Errorf("the other page's form was answered %d %q, want a refusal", resp.Status, body)
	}

	// The console's own form: the frame is still held, and aborting it is
	// the first verdict the proxy gets.
	within(t, ctx, "aborting through the console's page",
		chromedp.Navigate(base+"/holds"),
		visible(`form.held[data-n="1"]`),
		chromedp.Click(chromedp.CSS(`form.held[data-n="1"] button[value=abort]`)),
		visible(`section.proxy p.empty`),
	)
	if v := p.next(t, "verdict"); string(v["action"]) != `"abort"` || string(v["n"]) != "1" {
		t.Errorf("the proxy's first verdict: %s on frame %s, want the console's abort of frame 1", v["action"], v["n"])
	}
	within(t, ctx, "setting a breakpoint through the console's page",
		chromedp.SendKeys(chromedp.CSS(`input[name=tools]`), "cancel_pending_order"),
		chromedp.Click(chromedp.CSS(`form[action="/holds/breakpoints"] button`)),
		visible(`input[name=tools][value="cancel_pending_order"]`),
	)
	if bp := p.next(t, "breakpoints"); string(bp["tools"]) != `["cancel_pending_order"]` {
		t.Errorf("breakpoints sent: tools %s", bp["tools"])
	}
}
