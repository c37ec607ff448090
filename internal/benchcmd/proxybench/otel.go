package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/hoist-mcp/hoist/internal/benchcmd/turns"
)

// targetOtelRatio: with --otel and its collector down, at least 95% of the
// calls per second without it in every cell (issue 29, point 1).
const targetOtelRatio = 0.95

// deadCollector returns the URL of a loopback port nothing listens on: a
// collector that is down, which refuses every export at once.
func deadCollector() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr, nil
}

// otelBench measures the relay runs' calls per second through hoist-mcp
// --record --otel, its traces and metrics sent to a collector that is down,
// against hoist-mcp --record alone, in turns (package turns): export is
// batched off the forwarding path, so the host should not notice.
func otelBench(c config, w io.Writer) error {
	if c.everything == "" {
		return fmt.Errorf("server-everything not installed (run scripts/peers.sh)")
	}
	flights, err := turns.ParseFlights(c.relayFlight)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(c.dir, "otel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	collector, err := deadCollector()
	if err != nil {
		return err
	}
	names := []string{"hoist-mcp --record", "hoist-mcp --record --otel"}
	argvs := [][]string{
		{c.hoist, "--record", dir, "--", c.everything},
		// env execs hoist-mcp in its own place: the pid stays the proxy's.
		{"env", "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector, c.hoist, "--record", dir, "--otel", "--", c.everything},
	}
	clients, stop, err := startClients(names, argvs)
	if err != nil {
		return err
	}
	defer stop()
	side := func(cl *rpcClient) turns.Side {
		return turns.Side{
			Name: cl.name,
			Run: func(cell turns.Cell) (time.Duration, error) {
				return cl.echoCalls(turns.EchoMessage(cell.Size), cell.InFlight, cell.Calls)
			},
			PIDs: func() []int { return []int{cl.cmd.Process.Pid} },
		}
	}
	_, err = turns.Compare(w, "tools/call of server-everything's echo over stdio with --otel, its collector down at "+collector,
		"(CPU per call: each hoist-mcp's own, not the server's; summed over the rounds)",
		c.relayRounds, turns.Grid(c.relayCalls, c.relayLargeCalls, flights...), side(clients[0]), side(clients[1]), targetOtelRatio)
	return err
}
