// Command httpbench measures hoist-mcp's Streamable HTTP modes against
// baselines measured in the same run, and prints the figures beside the
// targets of issue 5, point 6 (make bench runs it through scripts/bench.sh):
//
//   - tools/call (server-everything's echo) over HTTP: requests per second
//     from -workers concurrent sessions, and p50/p99 of each call, against
//     server-everything's own Streamable HTTP endpoint and through
//     hoist-mcp --listen in front of server-everything on stdio, in turns;
//   - the same calls from a stdio client: through hoist-mcp --upstream to
//     server-everything's endpoint, against a direct HTTP client, one call
//     at a time;
//   - -soak-sessions sessions held open through --listen (in front of
//     hoist-mcp-demo) for -soak seconds, each calling every 50 ms: errors,
//     and the proxy's RSS sampled over the run: it should stay flat after
//     the first sample under load (the first of all is taken before it);
//   - calls per second of server-everything's echo tool on stdio, over one
//     Streamable HTTP session keeping one or eight calls in flight, with
//     16-byte and 64 KiB messages, through hoist-mcp --listen and through
//     supergateway --stateful (an npm stdio-to-HTTP bridge), the two
//     taking turns of a hundred calls, and the ratio of each round (issue
//     13, point 4; hoist-mcp with --record, as the issue 28 table has it).
//     -only gateway runs this part alone; -gateway-against BINARY puts
//     another hoist-mcp build (with --listen) in supergateway's place, to
//     measure a change before and after in the same run;
//   - how the calls per second grow with the sessions (issue 28, point 3):
//     -sessions counts (1, 16 and 64 by default) of sessions through
//     hoist-mcp --listen --record and through supergateway --stateful, each
//     session with its own server-everything and one 16-byte call in
//     flight, in turns; -only sessions runs this part alone.
//
// Usage:
//
//	go run ./internal/benchcmd/httpbench [-hoist bin/hoist-mcp] [-demo bin/hoist-mcp-demo] [-peers peers/node_modules] [-only gateway|sessions] [flags]
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// Targets of issue 5, point 6.
const (
	targetRateShare = 0.90
	targetAddedP99  = time.Millisecond
	// Issue 13, point 4: --listen at least three times supergateway's
	// calls per second in every cell.
	targetGatewayRatio = 3.0
)

type config struct {
	hoist, demo, peers string
	calls, warmup      int
	workers            int
	soak               time.Duration
	soakSessions       int

	only                            string
	gatewayCalls, gatewayLargeCalls int
	gatewayRounds                   int
	gatewayAgainst                  string
	gatewayFlight                   string
	sessionCounts                   string
	sessionCalls                    int
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var c config
	fs := flag.NewFlagSet("httpbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.hoist, "hoist", "bin/hoist-mcp", "the hoist-mcp `binary` to measure")
	fs.StringVar(&c.demo, "demo", "bin/hoist-mcp-demo", "the hoist-mcp-demo `binary`")
	fs.StringVar(&c.peers, "peers", "peers/node_modules", "the npm peers' `node_modules` (scripts/peers.sh)")
	fs.IntVar(&c.calls, "calls", 2000, "measured calls per endpoint")
	fs.IntVar(&c.warmup, "warmup", 200, "calls per endpoint before measuring")
	fs.IntVar(&c.workers, "workers", 4, "concurrent sessions of the rate runs")
	fs.DurationVar(&c.soak, "soak", 60*time.Second, "how long the soak holds its sessions")
	fs.IntVar(&c.soakSessions, "soak-sessions", 64, "sessions of the soak")
	fs.StringVar(&c.only, "only", "", "run only this `part`: gateway or sessions")
	fs.StringVar(&c.sessionCounts, "sessions", "1,16,64", "the sessions runs' `counts` of sessions, comma-separated")
	fs.IntVar(&c.sessionCalls, "sessions-calls", 1000, "calls per round of each sessions cell (at least 8 per session)")
	fs.IntVar(&c.gatewayCalls, "gateway-calls", 1000, "calls per round of the gateway runs' 16-byte cells")
	fs.IntVar(&c.gatewayLargeCalls, "gateway-large-calls", 300, "calls per round of the gateway runs' 64 KiB cells")
	fs.IntVar(&c.gatewayRounds, "gateway-rounds", 5, "rounds of the gateway runs")
	fs.StringVar(&c.gatewayFlight, "gateway-flight", "1,8", "the gateway runs' `counts` of calls in flight on their one session, comma-separated (make bench: 1,8,64)")
	fs.StringVar(&c.gatewayAgainst, "gateway-against", "", "measure the gateway runs against this hoist-mcp `binary` (another build, also --listen) instead of supergateway")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.only != "" && c.only != "gateway" && c.only != "sessions" {
		fmt.Fprintf(stderr, "httpbench: -only %q: the parts that run alone are gateway and sessions\n", c.only)
		return 2
	}
	if err := bench(c, stdout); err != nil {
		fmt.Fprintf(stderr, "httpbench: %v\n", err)
		return 1
	}
	return 0
}

func bench(c config, w io.Writer) error {
	everything := filepath.Join(c.peers, ".bin", "mcp-server-everything")
	if _, err := os.Stat(everything); err != nil {
		return fmt.Errorf("server-everything not installed (run scripts/peers.sh): %w", err)
	}
	fmt.Fprintf(w, "hoist-mcp Streamable HTTP benchmark: %d CPUs, load average %s at start\n\n", numCPU(), loadAverage())
	if c.only != "" {
		part := gatewayBench
		if c.only == "sessions" {
			part = sessionsBench
		}
		if _, err := part(c, w, everything); err != nil {
			return err
		}
		fmt.Fprintf(w, "load average %s at the end on %d CPUs\n", loadAverage(), numCPU())
		return nil
	}

	port := freePort()
	direct, err := startProc([]string{"PORT=" + port}, everything, "streamableHttp")
	if err != nil {
		return err
	}
	defer direct.drain().stop()
	if err := waitHTTP("127.0.0.1:" + port); err != nil {
		return err
	}
	directURL := "http://127.0.0.1:" + port + "/mcp"

	lport := freePort()
	listen, err := startProc(nil, c.hoist, "--listen", "127.0.0.1:"+lport, "--", everything)
	if err != nil {
		return err
	}
	defer listen.drain().stop()
	if err := waitHTTP("127.0.0.1:" + lport); err != nil {
		return err
	}
	listenURL := "http://127.0.0.1:" + lport + "/mcp"

	// Rate and latency over HTTP, the two endpoints in turns.
	names := []string{"server-everything's endpoint", "hoist-mcp --listen"}
	urls := []string{directURL, listenURL}
	results := make([]rateResult, 2)
	for round := 0; round < 2; round++ {
		for i := range urls {
			j := (i + round) % 2
			r, err := rate(urls[j], c.workers, c.warmup, c.calls/2)
			if err != nil {
				return fmt.Errorf("%s: %w", names[j], err)
			}
			results[j].merge(r)
		}
	}
	fmt.Fprintf(w, "tools/call (echo) over Streamable HTTP: %d concurrent sessions, %d calls each endpoint\n", c.workers, c.calls)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\trequests/s\tof direct\tp50\tp99\terrors\t")
	for i, r := range results {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f%%\t%s\t%s\t%d\t\n", names[i], r.rps(), 100*r.rps()/results[0].rps(), us(r.q(0.5)), us(r.q(0.99)), r.errors)
	}
	tw.Flush()
	listenShare := results[1].rps() / results[0].rps()
	listenAddedP99 := results[1].q(0.99) - results[0].q(0.99)

	// Sequential calls from a stdio client through --upstream, against a
	// direct HTTP client.
	up, err := upstreamLatency(c, directURL)
	if err != nil {
		return fmt.Errorf("--upstream: %w", err)
	}
	dir, err := rate(directURL, 1, c.warmup, c.calls)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntools/call (echo) one at a time: a direct HTTP client, and a stdio client through hoist-mcp --upstream\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\trequests/s\tof direct\tp50\tp99\t")
	fmt.Fprintf(tw, "direct HTTP client\t%.0f\t100%%\t%s\t%s\t\n", dir.rps(), us(dir.q(0.5)), us(dir.q(0.99)))
	fmt.Fprintf(tw, "hoist-mcp --upstream\t%.0f\t%.0f%%\t%s\t%s\t\n", up.rps(), 100*up.rps()/dir.rps(), us(up.q(0.5)), us(up.q(0.99)))
	tw.Flush()
	upShare := up.rps() / dir.rps()
	upAddedP99 := up.q(0.99) - dir.q(0.99)

	// The soak: many sessions held open through --listen.
	soak, err := soakRun(c)
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	fmt.Fprintf(w, "\n%d sessions through hoist-mcp --listen (hoist-mcp-demo) for %v, a call each every 50 ms\n", c.soakSessions, c.soak)
	fmt.Fprintf(w, "  calls %d, errors %d; proxy RSS first %s, last %s, max %s (sampled every %v)\n",
		soak.calls, soak.errors, mb(soak.rss[0]), mb(soak.rss[len(soak.rss)-1]), mb(slices.Max(soak.rss)), soak.every)
	samples := make([]string, len(soak.rss))
	for i, r := range soak.rss {
		samples[i] = strconv.FormatFloat(float64(r)/1e6, 'f', 1, 64)
	}
	fmt.Fprintf(w, "  RSS samples, MB: %s\n", strings.Join(samples, " "))

	fmt.Fprintln(w)
	gatewayMet, err := gatewayBench(c, w, everything)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	fmt.Fprintln(w)
	sessionsMet, err := sessionsBench(c, w, everything)
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}

	fmt.Fprintf(w, "\nagainst the targets (issue 5, point 6; issue 13, point 4)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tmeasured\ttarget\t\t")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(tw, "--listen rate / direct\t%.0f%%\t≥ %.0f%%\t%s\t\n", 100*listenShare, 100*targetRateShare, verdict(listenShare >= targetRateShare))
	fmt.Fprintf(tw, "--listen added p99\t%s\t≤ %s\t%s\t\n", us(listenAddedP99), us(targetAddedP99), verdict(listenAddedP99 <= targetAddedP99))
	fmt.Fprintf(tw, "--upstream rate / direct\t%.0f%%\t≥ %.0f%%\t%s\t\n", 100*upShare, 100*targetRateShare, verdict(upShare >= targetRateShare))
	fmt.Fprintf(tw, "--upstream added p99\t%s\t≤ %s\t%s\t\n", us(upAddedP99), us(targetAddedP99), verdict(upAddedP99 <= targetAddedP99))
	// The first sample is taken before the load starts; the second, once
	// every session has been busy for a while, is the baseline of "flat".
	base := soak.rss[min(1, len(soak.rss)-1)]
	growth := float64(soak.rss[len(soak.rss)-1]) / float64(base)
	fmt.Fprintf(tw, "soak errors, RSS end / after warm-up\t%d, %.2f×\t0, ≤ 1.20×\t%s\t\n", soak.errors, growth, verdict(soak.errors == 0 && growth <= 1.2))
	fmt.Fprintf(tw, "calls/s --listen / supergateway, every cell\tabove\t≥ %.0f×\t%s\t\n", targetGatewayRatio, verdict(gatewayMet))
	fmt.Fprintf(tw, "the same at every count of sessions\tabove\t≥ %.0f×\t%s\t\n", targetGatewayRatio, verdict(sessionsMet))
	tw.Flush()
	fmt.Fprintf(w, "load average %s at the end on %d CPUs\n", loadAverage(), numCPU())
	return nil
}

// rateResult holds the latencies of a rate run and its wall time.
type rateResult struct {
	lat    []time.Duration
	wall   time.Duration
	errors int
}

func (r *rateResult) merge(o rateResult) {
	r.lat = append(r.lat, o.lat...)
	r.wall += o.wall
	r.errors += o.errors
}

func (r rateResult) rps() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(len(r.lat)) / r.wall.Seconds()
}

func (r rateResult) q(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := slices.Clone(r.lat)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// session is a thin Streamable HTTP client of one MCP session.
type session struct {
	url     string
	client  *http.Client
	id      string
	version string
	next    atomic.Int64 // the last request id used; calls may run at once
}

var callBody = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}`

func newSession(url string, client *http.Client) (*session, error) {
	s := &session{url: url, client: client}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"httpbench","version":"0"}}}`
	resp, _, err := s.post(init)
	if err != nil {
		return nil, err
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	s.version = "2025-06-18"
	if _, _, err := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	}
	return s, nil
}

// post sends one message and reads the whole answer.
func (s *session) post(body string) (*http.Response, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", s.version)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if bytes.Contains(b, []byte(`"error":{`)) {
		return nil, nil, fmt.Errorf("JSON-RPC error: %s", bytes.TrimSpace(b))
	}
	return resp, b, nil
}

func (s *session) call(tool, args string) error {
	_, _, err := s.post(fmt.Sprintf(callBody, s.next.Add(1), tool, args))
	return err
}

func (s *session) close() {
	req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.version)
	if resp, err := s.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// rate runs workers sessions that each make calls echo calls in a row.
func rate(url string, workers, warmup, calls int) (rateResult, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}}
	sessions := make([]*session, workers)
	for i := range sessions {
		s, err := newSession(url, client)
		if err != nil {
			return rateResult{}, err
		}
		defer s.close()
		for j := 0; j < warmup/workers; j++ {
			if err := s.call("echo", `{"message":"warm"}`); err != nil {
				return rateResult{}, err
			}
		}
		sessions[i] = s
	}
	var mu sync.Mutex
	var res rateResult
	var wg sync.WaitGroup
	start := time.Now()
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, calls/workers)
			errs := 0
			for j := 0; j < calls/workers; j++ {
				t0 := time.Now()
				if err := s.call("echo", `{"message":"hello"}`); err != nil {
					errs++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	return res, nil
}

// upstreamLatency drives hoist-mcp --upstream over stdio, one call at a
// time.
func upstreamLatency(c config, url string) (rateResult, error) {
	p, err := startProc(nil, c.hoist, "--upstream", url)
	if err != nil {
		return rateResult{}, err
	}
	defer p.stop()
	rd := bufio.NewReaderSize(p.stdout, 1<<20)
	send := func(line string) error {
		_, err := io.WriteString(p.stdin, line+"\n")
		return err
	}
	roundTrip := func(line string) error {
		if err := send(line); err != nil {
			return err
		}
		for {
			l, err := rd.ReadBytes('\n')
			if err != nil {
				return err
			}
			if bytes.Contains(l, []byte(`"result"`)) || bytes.Contains(l, []byte(`"error"`)) {
				if bytes.Contains(l, []byte(`"error":{`)) {
					return fmt.Errorf("%s", bytes.TrimSpace(l))
				}
				return nil
			}
		}
	}
	if err := roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"httpbench","version":"0"}}}`); err != nil {
		return rateResult{}, err
	}
	if err := send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return rateResult{}, err
	}
	var res rateResult
	for i := 1; i <= c.warmup+c.calls; i++ {
		t0 := time.Now()
		if err := roundTrip(fmt.Sprintf(callBody, i, "echo", `{"message":"hello"}`)); err != nil {
			return res, err
		}
		if i > c.warmup {
			d := time.Since(t0)
			res.lat = append(res.lat, d)
			res.wall += d
		}
	}
	return res, nil
}

type soakResult struct {
	calls, errors int64
	rss           []int64
	every         time.Duration
}

// soakRun holds c.soakSessions sessions through --listen in front of
// hoist-mcp-demo for c.soak, sampling the proxy's RSS.
func soakRun(c config) (soakResult, error) {
	port := freePort()
	p, err := startProc(nil, c.hoist, "--listen", "127.0.0.1:"+port, "--", c.demo)
	if err != nil {
		return soakResult{}, err
	}
	defer p.drain().stop()
	addr := "127.0.0.1:" + port
	if err := waitHTTP(addr); err != nil {
		return soakResult{}, err
	}
	url := "http://" + addr + "/mcp"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.soakSessions * 2}}
	var res soakResult
	var calls, errs atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < c.soakSessions; i++ {
		s, err := newSession(url, client)
		if err != nil {
			close(stop)
			wg.Wait()
			return res, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.close()
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				calls.Add(1)
				if err := s.call("lookup", `{"text":"soak"}`); err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	res.every = max(c.soak/12, time.Second)
	res.rss = append(res.rss, rss(p.cmd.Process.Pid))
	deadline := time.Now().Add(c.soak)
	for time.Now().Before(deadline) {
		time.Sleep(min(res.every, time.Until(deadline)))
		res.rss = append(res.rss, rss(p.cmd.Process.Pid))
	}
	close(stop)
	wg.Wait()
	res.calls, res.errors = calls.Load(), errs.Load()
	return res, nil
}

type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
}

func startProc(env []string, name string, args ...string) (*proc, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return &proc{cmd: cmd, stdin: stdin, stdout: stdout}, nil
}

// drain discards what the process prints (server-everything logs every
// request on stdout, and must not block on a full pipe).
func (p *proc) drain() *proc {
	go io.Copy(io.Discard, p.stdout)
	return p
}

func (p *proc) stop() {
	p.stdin.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// waitHTTP waits until addr accepts connections.
func waitHTTP(addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New(addr + " did not start listening")
}

func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "0"
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// rss reads a process's resident set size from /proc.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func numCPU() int { return runtime.NumCPU() }

func us(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }

func mb(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 1, 64) + " MB" }
