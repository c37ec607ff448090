package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"text/tabwriter"
	"time"
)

// Issue 10, point 7: the proxy's added latency on a write the guards check.
const targetGuardedP99 = 50 * time.Microsecond

// guardedSetup shows the session user_1, its order #W1a and that order
// cancelled, so that every retail rule has its facts when the measured
// write comes.
var guardedSetup = []string{
	`{"name":"find_user_id_by_email","arguments":{"email":"c1@example.com"}}`,
	`{"name":"get_user_details","arguments":{"user_id":"user_1"}}`,
	`{"name":"get_order_details","arguments":{"order_id":"#W1a"}}`,
	`{"name":"cancel_pending_order","arguments":{"order_id":"#W1a","reason":"no longer needed"}}`,
}

// guardedWrite is the measured write: the cancel of #W1a again. Every rule
// checks it; retail.order_status would refuse it (the order is cancelled)
// but only logs here, so that it reaches the shop, which answers with its
// error, the same on every path.
const guardedWrite = `{"name":"cancel_pending_order","arguments":{"order_id":"#W1a","reason":"no longer needed"}}`

// benchGuards measures the round trip of a write to hoist-mcp-demo --world
// retail directly, through hoist-mcp, and through hoist-mcp --guards
// (writing its guards log) in turns, and prints what the guards add.
func benchGuards(c config, w io.Writer) error {
	d, err := os.MkdirTemp(c.dir, "guards-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(d)
	shop := []string{c.demo, "--world", "retail"}
	names := []string{"direct", "hoist-mcp", "hoist-mcp --guards"}
	argvs := [][]string{
		shop,
		append([]string{c.hoist, "--"}, shop...),
		append([]string{c.hoist, "--domain", "retail", "--guards", "--guard", "retail.order_status=log",
			"--guards-log", d + "/{session}.guards.jsonl", "--"}, shop...),
	}
	fmt.Fprintf(w, "hoist-mcp --guards benchmark: %s %s/%s, %d CPUs, load average %s at start\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadAverage())
	lat, cpu, err := latenciesOf(names, argvs, guardedSetup, guardedWrite, c.warmup, c.calls)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "round trip of a checked write (cancel_pending_order, every retail rule with its facts) to hoist-mcp-demo --world retail: %d sequential calls each after %d warm-up, in turns\n", c.calls, c.warmup)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tp50\tp99\tadded p50\tadded p99\tCPU per call\t")
	p50 := make([]time.Duration, len(lat))
	p99 := make([]time.Duration, len(lat))
	for i, l := range lat {
		p50[i], p99[i] = quantile(l, 0.50), quantile(l, 0.99)
		added := "\t"
		if i > 0 {
			added = fmt.Sprintf("%s\t%s", us(p50[i]-p50[0]), us(p99[i]-p99[0]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", names[i], us(p50[i]), us(p99[i]), added, us(cpu[i]))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "against the target (issue 10, point 7)")
	fmt.Fprintln(tw, "\tmeasured\ttarget\t\t")
	for _, r := range []struct {
		name string
		d    time.Duration
	}{
		{"added p99 of --guards over the passive proxy", p99[2] - p99[1]},
		{"added p99 of hoist-mcp --guards over the shop alone", p99[2] - p99[0]},
	} {
		verdict := "met"
		switch {
		case r.d < 0:
			verdict = "NOISE" // a proxy cannot shorten a round trip
		case r.d > targetGuardedP99:
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%s\t≤ %s\t%s\t\n", r.name, us(r.d), us(targetGuardedP99), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "load average %s at the end on %d CPUs; figures are noisier while other programs run\n", loadAverage(), runtime.NumCPU())
	return nil
}
