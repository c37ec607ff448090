// Command gobench runs one Go benchmark (go test -bench) and keeps one of
// the metrics it reports as a figure of the results file (package results),
// so that make bench charts what only an in-process benchmark measures:
// the heap a --flow session keeps per call over 100,000 calls
// (proxy.BenchmarkFlowRetained), the export's rows per CPU second with its
// allocator and with Go's (export.BenchmarkParquetAllocators). It prints
// go test's output as it comes.
//
// Usage:
//
//	go run ./internal/benchcmd/gobench -pkg ./proxy -bench FlowRetained -benchtime 100000x \
//	    -metric retained-B/call -table "--flow: heap kept per call" -row "100,000 calls" -unit B -target 1 -better lower
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/internal/benchcmd/results"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gobench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pkg := fs.String("pkg", "", "the `package` of the benchmark (./proxy)")
	bench := fs.String("bench", "", "the benchmark's `regexp` (go test -bench)")
	benchtime := fs.String("benchtime", "", "go test -benchtime")
	metrics := fs.String("metric", "", "the reported `units` to keep, comma-separated (ns/op, retained-B/call): one figure each")
	env := fs.String("env", "", "`NAME=VALUE` for the benchmark's environment (a store to read, say)")
	table := fs.String("table", "", "the figure's table (its chart)")
	row := fs.String("row", "", "the figure's row; with several metrics, each metric's row is this and the metric")
	unit := fs.String("unit", "", "the unit the page prints (default: the metric's)")
	target := fs.Float64("target", 0, "the target (0: none)")
	better := fs.String("better", results.Higher, "higher or lower")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *pkg == "" || *bench == "" || *metrics == "" || *table == "" || *row == "" {
		fmt.Fprintln(stderr, "gobench: -pkg, -bench, -metric, -table and -row are required")
		return 2
	}
	argv := []string{"test", "-run", "^$", "-bench", *bench, "-benchmem"}
	if *benchtime != "" {
		argv = append(argv, "-benchtime", *benchtime)
	}
	cmd := exec.Command("go", append(argv, *pkg)...)
	cmd.Env = os.Environ()
	if *env != "" {
		cmd.Env = append(cmd.Env, *env)
	}
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(stdout, &out)
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "gobench: go test %s: %v\n", *pkg, err)
		return 1
	}
	names := strings.Split(*metrics, ",")
	var rows []results.Row
	for _, m := range names {
		v, ok := metric(out.Bytes(), m)
		if !ok {
			fmt.Fprintf(stderr, "gobench: %s reported no %s\n", *bench, m)
			return 1
		}
		r := results.Row{Table: *table, Row: *row, Value: v, Unit: *unit, Target: *target, Better: *better}
		if r.Unit == "" {
			r.Unit = m
		}
		if len(names) > 1 {
			r.Row = *row + ", " + m
		}
		rows = append(rows, r)
	}
	if err := results.Add(rows...); err != nil {
		fmt.Fprintln(stderr, "gobench:", err)
		return 1
	}
	return 0
}

// metric finds the value reported with unit on a benchmark's result line
// ("BenchmarkX-2  100000  69447 ns/op  105.1 retained-B/call"), the last
// such line when there are several.
func metric(out []byte, unit string) (float64, bool) {
	var v float64
	found := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for i := 3; i < len(f); i++ {
			if f[i] != unit {
				continue
			}
			if x, err := strconv.ParseFloat(f[i-1], 64); err == nil {
				v, found = x, true
			}
		}
	}
	return v, found
}
