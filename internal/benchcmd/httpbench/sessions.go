package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/internal/benchcmd/results"
	"github.com/hoist-mcp/hoist/internal/benchcmd/turns"
)

// sessionCalls spreads calls tools/call requests of server-everything's
// echo tool over the first n of sessions, each making its share one after
// the other (one call in flight per session), and returns the wall time
// from the first request to the last answer.
func sessionCalls(sessions []*session, n int, message string, calls int) (time.Duration, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for i, s := range sessions[:n] {
		k := calls / n
		if i < calls%n {
			k++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for range k {
				buf = turns.AppendEchoCall(buf[:0], s.next.Add(1), message)
				_, b, err := s.post(string(buf))
				if err == nil && !turns.Echoes(b, message) {
					err = fmt.Errorf("an answer that does not echo the message: %.200q", b)
				}
				if err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}

// sessionsBench measures how calls per second grow with the sessions of one
// proxy (issue 28, point 3): hoist-mcp --listen --record against
// supergateway --stateful, each in front of server-everything on stdio,
// each MCP session with a server of its own on both sides. At each count
// of sessions, each session keeps one 16-byte call in flight; the two
// sides take turns (package turns). The figures go to the results file
// twice: the ratio per count against the target, and each side's own
// calls per second, the slope.
func sessionsBench(c config, w io.Writer, everything string) (bool, error) {
	counts, err := turns.ParseFlights(c.sessionCounts)
	if err != nil {
		return false, fmt.Errorf("-sessions: %w", err)
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	gateway := filepath.Join(c.peers, ".bin", "supergateway")
	if _, err := os.Stat(gateway); err != nil && c.gatewayAgainst == "" {
		return false, fmt.Errorf("supergateway not installed (run scripts/peers.sh): %w", err)
	}
	dir, err := os.MkdirTemp("", "httpbench-sessions-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	gport, lport := freePort(), freePort()
	baseName, baseArgv := "supergateway --stateful", []string{gateway, "--stdio", everything, "--outputTransport", "streamableHttp",
		"--stateful", "--port", gport, "--logLevel", "none"}
	if c.gatewayAgainst != "" {
		baseName, baseArgv = "-gateway-against", []string{c.gatewayAgainst, "--listen", "127.0.0.1:" + gport, "--record", filepath.Join(dir, "against"), "--", everything}
	}
	sg, err := startProc(nil, baseArgv[0], baseArgv[1:]...)
	if err != nil {
		return false, err
	}
	defer sg.drain().stop()
	hl, err := startProc(nil, c.hoist, "--listen", "127.0.0.1:"+lport, "--record", filepath.Join(dir, "hoist"), "--", everything)
	if err != nil {
		return false, err
	}
	defer hl.drain().stop()
	side := func(name string, p *proc, port string) (turns.Side, func(), error) {
		addr := "127.0.0.1:" + port
		if err := waitHTTP(addr); err != nil {
			return turns.Side{}, nil, err
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * most}}
		var ss []*session
		closeAll := func() {
			for _, s := range ss {
				s.close()
			}
		}
		for range most {
			s, err := newSession("http://"+addr+"/mcp", client)
			if err != nil {
				closeAll()
				return turns.Side{}, nil, fmt.Errorf("%s: opening session %d of %d: %w", name, len(ss)+1, most, err)
			}
			ss = append(ss, s)
		}
		return turns.Side{
			Name: name,
			Run: func(cell turns.Cell) (time.Duration, error) {
				return sessionCalls(ss, cell.InFlight, turns.EchoMessage(cell.Size), cell.Calls)
			},
			PIDs: func() []int { return []int{p.cmd.Process.Pid} },
		}, closeAll, nil
	}
	base, closeBase, err := side(baseName, sg, gport)
	if err != nil {
		return false, err
	}
	defer closeBase()
	subject, closeSubject, err := side("hoist-mcp --listen --record", hl, lport)
	if err != nil {
		return false, err
	}
	defer closeSubject()
	var cells []turns.Cell
	for _, n := range counts {
		cells = append(cells, turns.Cell{Size: 16, InFlight: n, Calls: max(c.sessionCalls, 8*n), Sessions: true})
	}
	target := targetGatewayRatio
	if c.gatewayAgainst != "" {
		target = 1
	}
	rs, err := turns.Run(c.gatewayRounds, cells, base, subject)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "tools/call of server-everything's echo (on stdio, one server per session) over Streamable HTTP, from 1 to %d sessions, one call each in flight: calls/s, %d rounds in turns, medians\n", most, c.gatewayRounds)
	met := turns.Print(w, base, subject, rs, target)
	fmt.Fprintln(w, "(CPU per call: the proxy's own process, not its servers'; summed over the rounds)")
	rows := append(turns.Rows(base, subject, rs, target), turns.RateRows("calls/s as sessions grow", base, subject, rs)...)
	return met, results.Add(rows...)
}
