package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/internal/benchcmd/turns"
)

// echoCalls makes calls tools/call requests of server-everything's echo
// tool with message in the session, inflight of them at once, and returns
// the wall time they took. Every answer must echo the message.
func (s *session) echoCalls(message string, inflight, calls int) (time.Duration, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for w := range inflight {
		n := calls / inflight
		if w < calls%inflight {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				_, b, err := s.post(string(turns.AppendEchoCall(nil, s.next.Add(1), message)))
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

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// gatewayBench measures calls per second through hoist-mcp --listen against
// supergateway --stateful with Streamable HTTP output, each in front of
// server-everything on stdio (issue 13, point 4): one session each, the
// same client, message and number in flight, in turns (package turns). It
// returns whether every cell met the target.
func gatewayBench(c config, w io.Writer, everything string) (bool, error) {
	flights, err := turns.ParseFlights(c.gatewayFlight)
	if err != nil {
		return false, fmt.Errorf("-gateway-flight: %w", err)
	}
	gateway := filepath.Join(c.peers, ".bin", "supergateway")
	if _, err := os.Stat(gateway); err != nil && c.gatewayAgainst == "" {
		return false, fmt.Errorf("supergateway not installed (run scripts/peers.sh): %w", err)
	}
	gport, lport := freePort(), freePort()
	// supergateway with its logging off, its fastest: by default it logs
	// every message.
	baseName, baseArgv := "supergateway --stateful", []string{gateway, "--stdio", everything, "--outputTransport", "streamableHttp",
		"--stateful", "--port", gport, "--logLevel", "none"}
	note := "(CPU per call: CPU time of the gateway's own process, not its server's; summed over the rounds)"
	if c.gatewayAgainst != "" {
		// Another build in supergateway's place: before and after a
		// change, in the same run.
		baseName, baseArgv = "-gateway-against", []string{c.gatewayAgainst, "--listen", "127.0.0.1:" + gport, "--", everything}
		note = fmt.Sprintf("(-gateway-against is %s; CPU per call: each hoist-mcp's own, not the server's; summed over the rounds)", c.gatewayAgainst)
	}
	dir, err := os.MkdirTemp("", "httpbench-gateway-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	if c.gatewayAgainst != "" {
		baseArgv = slices.Insert(baseArgv, 3, "--record", filepath.Join(dir, "against"))
	}
	sg, err := startProc(nil, baseArgv[0], baseArgv[1:]...)
	if err != nil {
		return false, err
	}
	defer sg.drain().stop()
	// Recording, as the issue 28 table measures it: --listen --record.
	hl, err := startProc(nil, c.hoist, "--listen", "127.0.0.1:"+lport, "--record", filepath.Join(dir, "hoist"), "--", everything)
	if err != nil {
		return false, err
	}
	defer hl.drain().stop()
	side := func(name string, p *proc, port string) (turns.Side, error) {
		addr := "127.0.0.1:" + port
		if err := waitHTTP(addr); err != nil {
			return turns.Side{}, err
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		s, err := newSession("http://"+addr+"/mcp", client)
		if err != nil {
			return turns.Side{}, fmt.Errorf("%s: %w", name, err)
		}
		return turns.Side{
			Name: name,
			Run: func(cell turns.Cell) (time.Duration, error) {
				return s.echoCalls(turns.EchoMessage(cell.Size), cell.InFlight, cell.Calls)
			},
			// The gateway's own process, not the server it started.
			PIDs: func() []int { return []int{p.cmd.Process.Pid} },
		}, nil
	}
	base, err := side(baseName, sg, gport)
	if err != nil {
		return false, err
	}
	subject, err := side("hoist-mcp --listen --record", hl, lport)
	if err != nil {
		return false, err
	}
	// Against another build the question is only whether it is faster.
	target := targetGatewayRatio
	if c.gatewayAgainst != "" {
		target = 1
	}
	return turns.Compare(w, "tools/call of server-everything's echo (on stdio) over Streamable HTTP, one session each (issue 13, point 4)",
		note, c.gatewayRounds, turns.Grid(c.gatewayCalls, c.gatewayLargeCalls, flights...), base, subject, target)
}
