package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"text/tabwriter"
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

// otelSide is one proxy measured by otelBench: its client, and per cell
// what each group of turns measured.
type otelSide struct {
	cl *rpcClient
}

func (s otelSide) cpu() time.Duration { return turns.CPU(s.cl.cmd.Process.Pid) }

// otelCell is one cell's measurements: per group, each side's calls per
// second and CPU per call.
type otelCell struct {
	cell turns.Cell
	rate [][]float64       // [side][group]
	cpu  [][]time.Duration // [side][group]: the proxy's CPU per call
}

// otelBench measures the relay runs' calls per second through hoist-mcp
// --record --otel, its traces and metrics sent to a collector that is down,
// against hoist-mcp --record alone (and, with -otel-against, another
// build's --record --otel), the sides taking turns of a hundred calls in
// groups that run every side twice, in an order and then its reverse
// (A B B A, or A B C C B A): a load that rises or falls through a group
// weighs on every side alike. The groups start from each side in turn
// (A B B A, B A A B, …): the side in the middle runs twice in a row, warm,
// which favours it. A group's ratio is a side's calls per second
// over the baseline's in that group; the table gives the median of the
// groups' ratios with their quartiles and range, and each proxy's own CPU
// per call (its threads' time on a CPU, from /proc/PID/task/*/schedstat),
// which other load moves far less than calls per second.
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
	env := "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector
	names := []string{"--record", "--record --otel"}
	argvs := [][]string{
		{c.hoist, "--record", dir, "--", c.everything},
		// env execs hoist-mcp in its own place: the pid stays the proxy's.
		{"env", env, c.hoist, "--record", dir, "--otel", "--", c.everything},
	}
	if c.otelAgainst != "" {
		names = append(names, "-otel-against --otel")
		argvs = append(argvs, []string{"env", env, c.otelAgainst, "--record", dir, "--otel", "--", c.everything})
	}
	clients, stop, err := startClients(names, argvs)
	if err != nil {
		return err
	}
	defer stop()
	sides := make([]otelSide, len(clients))
	for i, cl := range clients {
		sides[i] = otelSide{cl: cl}
	}
	fmt.Fprintf(w, "tools/call of server-everything's echo over stdio through hoist-mcp, --otel's collector down at %s; load average %s at start\n", collector, loadAverage())
	cells := turns.Grid(c.relayCalls, c.relayLargeCalls, flights...)
	measured, err := runOtel(c.relayRounds, cells, sides)
	if err != nil {
		return err
	}
	met := printOtel(w, names, measured)
	fmt.Fprintf(w, "%d rounds; a group runs every side twice, A B … B A, from each side in turn, in turns of %d calls; ratio: calls/s over --record's in the same group, median [quartiles] (range); CPU: the proxy's own per call, median of the groups, and what it adds to --record's in the same group\n", c.relayRounds, turns.Turn)
	if c.otelAgainst != "" {
		fmt.Fprintf(w, "-otel-against is %s\n", c.otelAgainst)
	}
	verdict := "met"
	if !met {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "load average %s at the end; target ≥ %v× in every cell: %s\n", loadAverage(), targetOtelRatio, verdict)
	return nil
}

// runOtel warms every side up on every cell, then runs rounds rounds: in
// each, every cell's groups.
func runOtel(rounds int, cells []turns.Cell, sides []otelSide) ([]otelCell, error) {
	for _, s := range sides {
		for _, c := range cells {
			warm := c
			warm.Calls = max(c.Calls/5, 16)
			if _, err := s.cl.echoCalls(turns.EchoMessage(c.Size), c.InFlight, warm.Calls); err != nil {
				return nil, fmt.Errorf("%s: warming up, %s: %w", s.cl.name, c, err)
			}
		}
	}
	out := make([]otelCell, len(cells))
	for i, c := range cells {
		out[i] = otelCell{cell: c, rate: make([][]float64, len(sides)), cpu: make([][]time.Duration, len(sides))}
	}
	n := len(sides)
	for range rounds {
		for ci, c := range cells {
			turn := turns.TurnOf(c)
			message := turns.EchoMessage(c.Size)
			groups := max(1, c.Calls/(2*turn))
			for range groups {
				// Group g starts from side g mod n: the side that runs
				// two turns in a row, its threads and caches warm, is
				// each side in turn.
				first := len(out[ci].rate[0]) % n
				order := make([]int, 0, 2*n)
				for i := range n {
					order = append(order, (first+i)%n)
				}
				for i := n - 1; i >= 0; i-- {
					order = append(order, (first+i)%n)
				}
				took := make([]time.Duration, len(sides))
				cpu := make([]time.Duration, len(sides))
				for _, k := range order {
					s := sides[k]
					before := s.cpu()
					d, err := s.cl.echoCalls(message, c.InFlight, turn)
					if err != nil {
						return nil, fmt.Errorf("%s: %s: %w", s.cl.name, c, err)
					}
					cpu[k] += s.cpu() - before
					took[k] += d
				}
				m := &out[ci]
				for k := range sides {
					m.rate[k] = append(m.rate[k], float64(2*turn)/took[k].Seconds())
					m.cpu[k] = append(m.cpu[k], cpu[k]/time.Duration(2*turn))
				}
			}
		}
	}
	return out, nil
}

// ratios returns side k's calls per second over the baseline's, per group.
func ratios(m otelCell, k int) []float64 {
	r := make([]float64, len(m.rate[0]))
	for g := range r {
		r[g] = m.rate[k][g] / m.rate[0][g]
	}
	return r
}

// printOtel writes the table and reports whether every cell's median ratio
// of --otel over --record met the target.
func printOtel(w io.Writer, names []string, measured []otelCell) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "cell\tside\tgroups\tcalls/s\tratio\t[quartiles]\t(range)\tCPU per call\tadded\t[quartiles]\t\n")
	met := true
	for _, m := range measured {
		for k, name := range names {
			n := len(m.rate[k])
			cpu := durations(m.cpu[k])
			if k == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t\t\t\t%.1f µs\t\t\t\n", m.cell, name, n, turns.Median(m.rate[k]), turns.Median(cpu))
				continue
			}
			r := ratios(m, k)
			added := make([]float64, n)
			for g := range added {
				added[g] = float64(m.cpu[k][g]-m.cpu[0][g]) / 1e3
			}
			verdict := ""
			if k == 1 {
				ok := turns.Median(r) >= targetOtelRatio
				met = met && ok
				verdict = "met"
				if !ok {
					verdict = "MISSED"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.3f× %s\t[%.3f–%.3f]\t(%.2f–%.2f)\t%.1f µs\t%+.1f µs\t[%+.1f – %+.1f]\t\n", m.cell, name, n, turns.Median(m.rate[k]),
				turns.Median(r), verdict, quartile(r, 0.25), quartile(r, 0.75), slices.Min(r), slices.Max(r),
				turns.Median(cpu), turns.Median(added), quartile(added, 0.25), quartile(added, 0.75))
		}
	}
	tw.Flush()
	return met
}

// durations returns ds in microseconds.
func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / 1e3
	}
	return out
}

// quartile returns the q-quantile of xs, interpolated between ranks.
func quartile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}
