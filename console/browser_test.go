package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// chromium finds the browser, or skips the test; with
// HOIST_REQUIRE_BROWSER=1 (as .ci/run sets) a missing browser fails it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("HOIST_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium on PATH, and HOIST_REQUIRE_BROWSER=1: apt-get install -y chromium")
	}
	t.Skip("no Chromium on PATH (apt-get install -y chromium); HOIST_REQUIRE_BROWSER=1 makes this a failure")
	return ""
}

// browser starts headless Chromium with the flags a closed network needs
// (without them it waits on the network it cannot reach), and returns a
// tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// within runs actions with a deadline: the page is waited on by what it
// shows, and the deadline only stops a test that would otherwise hang.
func within(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// into runs a and keeps its value in dst.
func into[T any](a chromedp.Action[T], dst *T) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := a(ctx, tg)
		*dst = v
		return chromedp.Void{}, err
	}
}

// eval evaluates a JavaScript expression into dst.
func eval[T any](expr string, dst *T) chromedp.Action[chromedp.Void] {
	return into(chromedp.Evaluate[T](expr), dst)
}

func text(sel string, dst *string) chromedp.Action[chromedp.Void] {
	return into(chromedp.Text(chromedp.CSS(sel)), dst)
}

func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// shoot keeps a screenshot of the page as a test artifact: under
// HOIST_CONSOLE_SHOTS when set, else in the test's artifact directory
// (kept with go test -artifacts).
func shoot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	var png []byte
	within(t, ctx, "screenshot "+name, into(chromedp.FullScreenshot(100), &png))
	dir := os.Getenv("HOIST_CONSOLE_SHOTS")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	return png
}

// record runs the retail procedure proc for a customer through a
// recording hoist-mcp in front of hoist-mcp-demo's retail world.
func record(t *testing.T, dir, proc, email string, proxyFlags ...string) string {
	t.Helper()
	args := []string{"--param", "email=" + email, filepath.Join(testbin.Root(), "testdata", "procedures", "retail", proc+".jsonl"),
		"--", testbin.Build(t, "hoist-mcp"), "--record", dir, "--domain", "retail"}
	args = append(append(args, proxyFlags...), "--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	cmd := exec.Command(testbin.Build(t, "hoist-procedure"), args...)
	cmd.Env = testbin.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hoist-procedure %s: %v\n%s", proc, err, out)
	}
	return string(out)
}

func hoist(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist"), args...)
	cmd.Env = testbin.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hoist %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startConsole starts hoist console with args on a free loopback port and
// returns its address.
func startConsole(t *testing.T, args ...string) string {
	t.Helper()
	addr, _ := startConsoleProc(t, args...)
	return addr
}

// startConsoleProc is startConsole that also returns the console's
// process, for a test that ends it itself; a later --addr in args picks
// the address.
func startConsoleProc(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	base, cmd := testbin.StartConsole(t, args...)
	return strings.TrimPrefix(base, "http://"), cmd
}

func count(sel string) string {
	return fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)
}

// waitCount waits until sel matches n elements, looking again on each
// change of the page's DOM: it waits on the page's own updates.
func waitCount(sel string, n int) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`%s === %d`, count(sel), n), chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(0))
}

// TestConsoleInBrowser opens every page of a console over sessions the
// built binaries recorded (issue 15, point 4): scripted customers through
// hoist-mcp in front of the demo's retail world, a flow hoist learn made
// from them, and a customer served that flow.
func TestConsoleInBrowser(t *testing.T) {
	ctx := browser(t)
	work := t.TempDir()
	logs := filepath.Join(work, "logs")
	for i, proc := range []string{"review-orders", "cancel-order", "review-orders", "cancel-order"} {
		record(t, logs, proc, fmt.Sprintf("c%d@example.com", i+1))
	}
	flowFile := filepath.Join(work, "retail.flow.json")
	hoist(t, "learn", "--sessions", logs, "--domain", "retail", "--folds", "1", "--out", flowFile)
	served := record(t, logs, "cancel-order", "c15@example.com", "--flow", flowFile)
	if !strings.Contains(served, "answered by lookups") {
		t.Fatalf("the served customer was answered by no lookup:\n%s", served)
	}
	addr := startConsole(t, "--sessions", logs, "--flow", flowFile, "--poll", "50ms")
	base := "http://" + addr

	t.Run("sessions", func(t *testing.T) {
		var rows int
		var saved float64
		within(t, ctx, "the sessions page",
			chromedp.Navigate(base+"/"),
			visible(`tr.session`),
			eval(count(`tr.session`), &rows),
			eval(`[...document.querySelectorAll('tr.session td.saved')].reduce((n, td) => n + Number(td.dataset.saved), 0)`, &saved),
		)
		if rows != 5 {
			t.Errorf("%d sessions listed, want 5", rows)
		}
		// Each row's turns saved is the flow's audit of that session: they
		// add up to hoist audit's total.
		if got, want := fmt.Sprintf("%.1f", saved), auditSaved(t, logs, flowFile); got != want || saved == 0 {
			t.Errorf("the rows' turns saved add up to %s, hoist audit's total is %s", got, want)
		}
		var domains string
		within(t, ctx, "filtering by domain",
			chromedp.Navigate(base+"/?domain=nothing"),
			visible(`td.empty`),
			text(`p.count`, &domains),
		)
		if !strings.HasPrefix(domains, "0 sessions") {
			t.Errorf("domain filter: %q", domains)
		}
		var today, past, bad string
		// Since yesterday until today's whole day: the sessions were
		// recorded minutes ago, even across midnight.
		now := time.Now().UTC()
		within(t, ctx, "filtering by date",
			chromedp.Navigate(base+"/?domain=retail&since="+now.AddDate(0, 0, -1).Format("2006-01-02")+"&until="+now.Format("2006-01-02")),
			visible(`p.count`),
			text(`p.count`, &today),
			chromedp.Navigate(base+"/?until=2001-01-01"),
			visible(`p.count`),
			text(`p.count`, &past),
			chromedp.Navigate(base+"/?since=yesterday"),
			visible(`p.error`),
			text(`p.error`, &bad),
		)
		if !strings.HasPrefix(today, "5 sessions") || !strings.HasPrefix(past, "0 sessions") {
			t.Errorf("date filters: today %q, before 2001 %q", today, past)
		}
		if !strings.Contains(bad, `since: "yesterday" is neither a date`) {
			t.Errorf("a bad date: %q", bad)
		}
		within(t, ctx, "the sessions page", chromedp.Navigate(base+"/"), visible(`tr.session`))
		shoot(t, ctx, "sessions")
	})

	t.Run("session", func(t *testing.T) {
		var lookups, decisions, appended, turns int
		var mark, id string
		within(t, ctx, "the served session's page",
			chromedp.Navigate(base+"/"),
			visible(`tr.session`),
			// The newest session is the served one: it is listed first.
			eval(`document.querySelector('tr.session').dataset.id`, &id),
			chromedp.Click(chromedp.CSS(`tr.session td a`)),
			visible(`ol.timeline li.call`),
			eval(count(`li.call.by-proxy`), &lookups),
			eval(count(`tr.decision`), &decisions),
			eval(count(`details.appended`), &appended),
			eval(count(`li.turn`), &turns),
			text(`li.call.by-proxy .badge.used, li.call.by-proxy .badge.unproven, li.call.by-proxy .badge.remade`, &mark),
		)
		// The same session as hoist sessions show reads it from the logs.
		want := shown(t, logs, id)
		if lookups != want.proxy || lookups == 0 || appended == 0 || decisions == 0 || turns != want.Turns {
			t.Errorf("served session: %d lookups, %d appended items, %d decisions, %d turns; want %d lookups, an appended item, decisions, %d turns",
				lookups, appended, decisions, turns, want.proxy, want.Turns)
		}
		// The agent trusted the lookups and made none of those calls
		// itself; it cancelled an order whose id it read in the first, the
		// user's details: that lookup was used (package earned).
		if mark != "used" {
			t.Errorf("the proxy's first lookup marked %q, want used", mark)
		}
		png := shoot(t, ctx, "session")
		if p := os.Getenv("HOIST_CONSOLE_README_SHOT"); p != "" {
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("unserved session", func(t *testing.T) {
		var calls, proxy int
		var saved, listed string
		within(t, ctx, "a recorded session's page",
			chromedp.Navigate(base+"/"),
			visible(`tr.session`),
			text(`tr.session:last-child td:nth-child(12)`, &listed),
			chromedp.Click(chromedp.CSS(`tr.session:last-child td a`)),
			visible(`ol.timeline li.call`),
			eval(count(`li.call.by-agent`), &calls),
			eval(count(`li.call.by-proxy`), &proxy),
			eval(`document.querySelector('dd.audit').dataset.saved`, &saved),
		)
		if calls == 0 || proxy != 0 {
			t.Errorf("first session: %d agent calls, %d proxy lookups; want calls and no lookups", calls, proxy)
		}
		// Where the turns were saved: the flow's audit of this session,
		// the same figure the list shows for it.
		if saved == "0" || saved != listed {
			t.Errorf("turns the flow would save in the first session: %s on its page, %s in the list; want the same, above 0", saved, listed)
		}
	})

	t.Run("flow", func(t *testing.T) {
		var threshold, never string
		var edges, act int
		within(t, ctx, "the flow's page",
			chromedp.Navigate(base+"/flow?name=retail.flow"),
			visible(`svg.graph`),
			text(`.threshold`, &threshold),
			text(`ul.never`, &never),
			eval(count(`svg.graph path.edge`), &edges),
			eval(count(`svg.graph path.edge.act`), &act),
		)
		if threshold != "0.30" {
			t.Errorf("threshold %q, want hoist-mcp's default 0.30", threshold)
		}
		if !strings.Contains(never, "cancel_pending_order") {
			t.Errorf("never-called tools %q: want the write cancel_pending_order", never)
		}
		var rev struct {
			Lookups int `json:"lookups"`
		}
		if err := json.Unmarshal([]byte(hoist(t, "flow-show", flowFile, "--format", "json")), &rev); err != nil {
			t.Fatal(err)
		}
		if act != rev.Lookups || act == 0 || edges < act {
			t.Errorf("graph: %d edges, %d acting; want the %d lookups flow-show lists", edges, act, rev.Lookups)
		}
		shoot(t, ctx, "flow")
	})

	t.Run("savings", func(t *testing.T) {
		var sites int
		var total string
		within(t, ctx, "the savings page",
			chromedp.Navigate(base+"/savings?name=retail.flow"),
			visible(`svg.chart`),
			eval(count(`table.sites tr.site-row`), &sites),
			text(`.saved-turns`, &total),
		)
		want := auditSavedBounds(t, logs, flowFile)
		if sites != 2 || total != want+" turns" {
			t.Errorf("savings: %d sites, %q saved; want 2 sites and hoist audit's %s turns", sites, total, want)
		}
		shoot(t, ctx, "savings")
	})

	t.Run("store", func(t *testing.T) {
		// The same sessions through a store, opened read-only: hoist
		// ingest makes it, and the console leaves its bytes as they were.
		db := filepath.Join(work, "episodes.db")
		hoist(t, "ingest", "--sessions", logs, "--store", db, "-q")
		before, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		sbase := "http://" + startConsole(t, "--store", db, "--flow", flowFile)
		var rows, lookups int
		var id string
		within(t, ctx, "the store's sessions",
			chromedp.Navigate(sbase+"/?flow="),
			visible(`tr.session`),
			eval(count(`tr.session`), &rows),
			eval(`document.querySelector('tr.session').dataset.id`, &id),
			chromedp.Click(chromedp.CSS(`tr.session td a`)),
			visible(`ol.timeline li.call`),
			eval(count(`li.call.by-proxy`), &lookups),
		)
		if want := shown(t, logs, id).proxy; rows != 5 || lookups != want || lookups == 0 {
			t.Errorf("from the store: %d sessions, %d lookups in the served one; want 5 and %d", rows, lookups, want)
		}
		after, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		if string(before) != string(after) {
			t.Error("the console changed the store it reads")
		}
	})

	t.Run("hosts", func(t *testing.T) {
		var out string
		within(t, ctx, "the hosts page",
			chromedp.Navigate(base+"/hosts"),
			visible(`input[name=command]`),
			chromedp.SendKeys(chromedp.CSS(`input[name=command]`), "npx -y some-mcp-server"),
			chromedp.SendKeys(chromedp.CSS(`input[name=domain]`), "orders"),
			chromedp.Submit(chromedp.CSS(`input[name=command]`)),
			visible(`pre.init`),
			text(`pre.init`, &out),
		)
		want := hoist(t, "init", "--domain", "orders", "--", "npx", "-y", "some-mcp-server")
		if strings.TrimSpace(out) != strings.TrimSpace(want) {
			t.Errorf("hosts page shows\n%s\nhoist init prints\n%s", out, want)
		}
		shoot(t, ctx, "hosts")
	})
}

// host plays an MCP host: JSON-RPC lines into a recording hoist-mcp in
// front of the demo's retail world, and its answers read back.
type host struct {
	in    io.WriteCloser
	lines chan string
	errs  chan string // the proxy's stderr, line by line
}

// startHost starts hoist-mcp recording into dir in front of the demo's
// retail world, with flags before the server command, and plays its host.
func startHost(t *testing.T, dir string, flags ...string) *host {
	t.Helper()
	args := append(append([]string{"--record", dir, "--domain", "retail"}, flags...), "--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), args...)
	cmd.Env = testbin.Env()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &host{in: in, lines: make(chan string, 64), errs: make(chan string, 256)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	go func() {
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			select {
			case h.errs <- sc.Text():
			default: // a test that reads none of it does not stop the proxy
			}
		}
		close(h.errs)
	}()
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return h
}

// send sends a request without waiting for its answer.
func (h *host) send(t *testing.T, id int, method, params string) {
	t.Helper()
	if _, err := fmt.Fprintf(h.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		t.Fatal(err)
	}
}

// await waits for the answer with id; every line the host gets before it
// must be the answer to nothing else.
func (h *host) await(t *testing.T, id int) string {
	t.Helper()
	want := fmt.Sprintf(`"id":%d`, id)
	for l := range h.lines {
		if strings.Contains(l, want) {
			return l
		}
	}
	t.Fatalf("the proxy ended before answering %d", id)
	return ""
}

// call sends a request and waits for the answer with its id.
func (h *host) call(t *testing.T, id int, method, params string) string {
	t.Helper()
	h.send(t, id, method, params)
	return h.await(t, id)
}

// TestConsoleLive watches a session grow on the page while a proxy
// records it (issue 15, point 2): the list gains the session when its
// proxy starts, and its timeline each call as the proxy logs it. The test
// waits on what the page shows, which changes only when the server's
// event arrives.
func TestConsoleLive(t *testing.T) {
	ctx := browser(t)
	logs := filepath.Join(t.TempDir(), "logs")
	record(t, logs, "review-orders", "c1@example.com")
	base := "http://" + startConsole(t, "--sessions", logs, "--poll", "50ms")

	within(t, ctx, "the sessions page", chromedp.Navigate(base+"/"), visible(`tr.session`), waitCount(`tr.session`, 1))
	h := startHost(t, logs)
	h.call(t, 0, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"0"}}`)
	fmt.Fprintln(h.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.call(t, 1, "tools/list", `{}`)
	var updates string
	within(t, ctx, "the new session in the list", waitCount(`tr.session`, 2), into(chromedp.Evaluate[string](`document.body.dataset.updates`), &updates))
	if updates == "0" {
		t.Error("the list grew without a live update")
	}
	shoot(t, ctx, "live-sessions")

	within(t, ctx, "the live session's page",
		// Newest first: the live session is at the top. Its link is read
		// and followed in one step: the list may be drawn again meanwhile.
		chromedp.Evaluate[chromedp.Void](`location.href = document.querySelector("tr.session td a").href`),
		visible(`main#session`),
		waitCount(`li.call`, 0),
	)
	h.call(t, 2, "tools/call", `{"name":"find_user_id_by_email","arguments":{"email":"c2@example.com"}}`)
	within(t, ctx, "the first call on the page", waitCount(`li.call pre.result`, 1))
	h.call(t, 3, "tools/call", `{"name":"get_user_details","arguments":{"user_id":"user_2"}}`)
	var tool string
	within(t, ctx, "the second call on the page", waitCount(`li.call pre.result`, 2), text(`li.call:last-child code.tool`, &tool))
	if tool != "get_user_details" {
		t.Errorf("the timeline's last call is %q, want get_user_details", tool)
	}
	shoot(t, ctx, "live-session")
}

// shownSession is what hoist sessions show --json says of a session.
type shownSession struct {
	Turns  int `json:"llm_turns"`
	Events []struct {
		Type  string `json:"type"`
		Actor string `json:"actor"`
	} `json:"events"`
	proxy int // the proxy's calls
}

func shown(t *testing.T, logs, id string) shownSession {
	t.Helper()
	var s shownSession
	if err := json.Unmarshal([]byte(hoist(t, "sessions", "show", id, "--sessions", logs, "--json", "-q")), &s); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Events {
		if e.Actor == "proxy" {
			s.proxy++
		}
	}
	return s
}

// auditSaved is hoist audit's total of turns saved, as the page writes it.
func auditSaved(t *testing.T, logs, flowFile string) string {
	t.Helper()
	est, _ := auditSavedBoth(t, logs, flowFile)
	return est
}

// auditSavedBounds is the same with its bounds, as the Savings page writes
// it: with served sessions the figure is an estimate between bounds.
func auditSavedBounds(t *testing.T, logs, flowFile string) string {
	t.Helper()
	_, text := auditSavedBoth(t, logs, flowFile)
	return text
}

func auditSavedBoth(t *testing.T, logs, flowFile string) (est, text string) {
	t.Helper()
	out := hoist(t, "audit", "--sessions", logs, "--flow", flowFile, "--json", "-q")
	var a struct {
		Total struct {
			Saved *struct {
				Lo  float64 `json:"lo"`
				Est float64 `json:"estimate"`
				Hi  float64 `json:"hi"`
			} `json:"saved_turns_bounds"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.Total.Saved == nil {
		t.Fatalf("hoist audit --json: %v, no saved_turns_bounds in\n%s", err, out)
	}
	b := a.Total.Saved
	est = fmt.Sprintf("%.1f", b.Est)
	if b.Hi-b.Lo > 1e-9 {
		return est, fmt.Sprintf("%.1f (%.1f–%.1f)", b.Est, b.Lo, b.Hi)
	}
	return est, est
}
