package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/hoist-mcp/hoist/internal/benchcmd/turns"
)

// echoCalls makes calls tools/call requests of server-everything's echo
// tool with message, keeping inflight of them unanswered at any moment (a
// writer goroutine sends the next as each answer comes back), and returns
// the time from the first request written to the last answer read. Each
// answer must carry an id in flight and the echoed text.
func (c *rpcClient) echoCalls(message string, inflight, calls int) (time.Duration, error) {
	first := c.id + 1
	tokens := make(chan struct{}, inflight)
	for range inflight {
		tokens <- struct{}{}
	}
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		var buf []byte
		for i := range calls {
			select {
			case <-tokens:
			case <-stop:
				wrote <- nil
				return
			}
			buf = append(turns.AppendEchoCall(buf[:0], int64(first+i), message), '\n')
			if _, err := c.in.Write(buf); err != nil {
				wrote <- fmt.Errorf("%s: writing call %d: %w", c.name, first+i, err)
				return
			}
		}
		wrote <- nil
	}()
	t0 := time.Now()
	answered := make([]bool, calls)
	fail := func(err error) (time.Duration, error) {
		close(stop)
		return 0, err
	}
	for n := 0; n < calls; {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return fail(fmt.Errorf("%s: reading answer %d of %d: %w", c.name, n+1, calls, err))
		}
		at := bytes.LastIndex(line, []byte(`"id":`))
		if at < 0 || bytes.Contains(line[:min(len(line), 64)], []byte(`"method"`)) {
			continue // a notification of the server's own
		}
		digits := line[at+len(`"id":`):]
		digits = digits[:max(0, bytes.IndexAny(digits, ",}"))]
		id, err := strconv.Atoi(string(digits))
		k := id - first
		if err != nil || k < 0 || k >= calls || answered[k] {
			return fail(fmt.Errorf("%s: an answer to no call in flight: %.200q", c.name, line))
		}
		if !turns.Echoes(line, message) {
			return fail(fmt.Errorf("%s: answer %d does not echo the message: %.200q", c.name, id, line))
		}
		answered[k] = true
		n++
		tokens <- struct{}{}
	}
	d := time.Since(t0)
	c.id = first + calls - 1
	if err := <-wrote; err != nil {
		return 0, err
	}
	return d, nil
}

// relayBench measures calls per second through hoist-mcp --record against a
// cat relay in front of server-everything on stdio (issue 13, point 4): the
// same client, message and number in flight for both, in turns (package
// turns). It returns whether every cell met the target.
//
// What the profiles of hoist-mcp under these runs say bounds them (the
// docs/performance.md has the figures): at 64 KiB the log's 128 KiB a
// call, validated and written, cost several times the cats' whole work;
// at 16 B the pipes' system calls and Go's hand-offs between goroutines
// do. On two shared cores the calls per second follow the CPU per call.
func relayBench(c config, w io.Writer) (bool, error) {
	flights, err := turns.ParseFlights(c.relayFlight)
	if err != nil {
		return false, err
	}
	dir, err := os.MkdirTemp(c.dir, "relay-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	names := []string{"cat relay", "hoist-mcp --record"}
	argvs := [][]string{
		// The server between two cats: two more pipes and two more
		// processes in the path, and nothing else.
		{"sh", "-c", `cat | "$@" | cat`, "sh", c.everything},
		{c.hoist, "--record", dir, "--", c.everything},
	}
	if c.relayAgainst != "" {
		// Another build in the cat's place: before and after a change,
		// in the same run.
		names[0] = "-relay-against"
		argvs[0] = []string{c.relayAgainst, "--record", dir, "--", c.everything}
	}
	clients, stop, err := startClients(names, argvs)
	if err != nil {
		return false, err
	}
	defer stop()
	side := func(cl *rpcClient, pids func() []int) turns.Side {
		return turns.Side{
			Name: cl.name,
			Run: func(cell turns.Cell) (time.Duration, error) {
				return cl.echoCalls(turns.EchoMessage(cell.Size), cell.InFlight, cell.Calls)
			},
			PIDs: pids,
		}
	}
	cats := side(clients[0], func() []int { return turns.ChildrenNamed(clients[0].cmd.Process.Pid, "cat") })
	if c.relayAgainst != "" {
		cats.PIDs = func() []int { return []int{clients[0].cmd.Process.Pid} }
	}
	hoist := side(clients[1], func() []int { return []int{clients[1].cmd.Process.Pid} })
	note := "(CPU per call: CPU time of the two cats, and of hoist-mcp alone, not the server's; summed over the rounds)"
	if c.relayAgainst != "" {
		note = fmt.Sprintf("(-relay-against is %s; CPU per call: each hoist-mcp's own, not the server's; summed over the rounds)", c.relayAgainst)
	}
	// Against another build the question is only whether it is faster.
	target := targetRelayRatio
	if c.relayAgainst != "" {
		target = 1
	}
	return turns.Compare(w, "tools/call of server-everything's echo over stdio, a raw JSON-RPC client (issue 13, point 4)",
		note, c.relayRounds, turns.Grid(c.relayCalls, c.relayLargeCalls, flights...), cats, hoist, target)
}
