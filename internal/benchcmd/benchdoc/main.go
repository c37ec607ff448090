// Command benchdoc draws a benchmark run: it reads the figures the
// benchmarks wrote (package results, one JSON line each), draws one SVG
// chart per table, and writes the page that shows them with the machine
// and the command (docs/bench.md). make bench runs it after the
// benchmarks; it measures nothing itself.
//
// With -update FILE, the figures of a partial run (scripts/bench.sh chart
// PART...) replace, table by table, those of the results file, which is
// rewritten with them before the page is drawn: a table measured again is
// the new run's whole, the others stay as they were, and the page gives
// each table's own date and load.
//
// Usage:
//
//	go run ./internal/benchcmd/benchdoc -results FILE [-update FILE] [-out docs/bench.md] [-img docs/img/bench] [-command "make bench"]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/internal/benchcmd/results"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchdoc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("results", "", "the results `FILE` (JSON lines) the benchmarks wrote")
	out := fs.String("out", filepath.Join("docs", "bench.md"), "the page to write")
	img := fs.String("img", "docs/img/bench", "the `directory` of the charts")
	command := fs.String("command", "make bench", "the command the page says produced it")
	update := fs.String("update", "", "a partial run's results `FILE`: its tables replace those of -results, which is rewritten")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *in == "" {
		fmt.Fprintln(stderr, "benchdoc: -results: the results file is required")
		return 2
	}
	rows, err := read(*in)
	if err != nil {
		fmt.Fprintf(stderr, "benchdoc: %v\n", err)
		return 2
	}
	if *update != "" {
		newer, err := read(*update)
		if err != nil {
			fmt.Fprintf(stderr, "benchdoc: -update: %v\n", err)
			return 2
		}
		rows = replaceTables(rows, newer)
		if err := write(*in, rows); err != nil {
			fmt.Fprintf(stderr, "benchdoc: %v\n", err)
			return 1
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "benchdoc: %s: no figures\n", *in)
		return 1
	}
	tables := group(rows)
	if err := os.MkdirAll(*img, 0o755); err != nil {
		fmt.Fprintf(stderr, "benchdoc: -img: %v\n", err)
		return 1
	}
	rel, err := filepath.Rel(filepath.Dir(*out), *img)
	if err != nil {
		rel = *img
	}
	var page bytes.Buffer
	writeHead(&page, *command, rows)
	for _, t := range tables {
		name := slug(t.name) + ".svg"
		if err := atomicfile.WriteFile(filepath.Join(*img, name), []byte(chart(t)), 0o644); err != nil {
			fmt.Fprintf(stderr, "benchdoc: %v\n", err)
			return 1
		}
		writeTable(&page, t, filepath.ToSlash(filepath.Join(rel, name)))
	}
	if err := atomicfile.WriteFile(*out, page.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "benchdoc: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "benchdoc: %d charts, %d figures: %s\n", len(tables), len(rows), *out)
	return 0
}

// read reads the results file; a bad line is an error naming it.
func read(path string) ([]results.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []results.Row
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r results.Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if r.Table == "" {
			return nil, fmt.Errorf("%s:%d: a figure with no table", path, n)
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// replaceTables returns rows with every table newer has replaced by
// newer's rows of it, in the place the table had (a new table at the end).
func replaceTables(rows, newer []results.Row) []results.Row {
	fresh := map[string]bool{}
	for _, r := range newer {
		fresh[r.Table] = true
	}
	var out []results.Row
	placed := map[string]bool{}
	for _, r := range rows {
		if !fresh[r.Table] {
			out = append(out, r)
			continue
		}
		if placed[r.Table] {
			continue
		}
		placed[r.Table] = true
		for _, n := range newer {
			if n.Table == r.Table {
				out = append(out, n)
			}
		}
	}
	for _, n := range newer {
		if !placed[n.Table] {
			out = append(out, n)
		}
	}
	return out
}

// write rewrites the results file with rows, one JSON line each.
func write(path string, rows []results.Row) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(path, b.Bytes(), 0o644)
}

// table is the rows of one chart, in the order the run wrote them; a row
// written again (a table measured twice) replaces the earlier.
type table struct {
	name string
	rows []results.Row
}

func (t table) scaled() bool {
	for _, r := range t.rows {
		if r.Scale == 0 {
			return false
		}
	}
	return true
}

func group(rows []results.Row) []table {
	var out []table
	at := map[string]int{}
	for _, r := range rows {
		i, ok := at[r.Table]
		if !ok {
			i = len(out)
			at[r.Table] = i
			out = append(out, table{name: r.Table})
		}
		t := &out[i]
		if j := slices.IndexFunc(t.rows, func(x results.Row) bool { return x.Row == r.Row }); j >= 0 {
			t.rows[j] = r
			continue
		}
		t.rows = append(t.rows, r)
	}
	return out
}

func writeHead(w *bytes.Buffer, command string, rows []results.Row) {
	fmt.Fprintf(w, "# Benchmarks\n\n")
	fmt.Fprintf(w, "Drawn by `%s` from the figures it keeps (`docs/bench/results.jsonl`);\n", command)
	fmt.Fprintf(w, "`make bench-chart PARTS=\"relay sessions\"` measures some parts again and\n")
	fmt.Fprintf(w, "redraws the page with them, so each table says when and at what load it\n")
	fmt.Fprintf(w, "was measured. Every figure beside its anchor is a ratio measured in the\n")
	fmt.Fprintf(w, "same run, in interleaved rounds, so that what else loads the machine\n")
	fmt.Fprintf(w, "weighs on both.\n")
	fmt.Fprintf(w, "A dashed line is the target; a bar or point in orange misses it.\n\n")
	fmt.Fprintf(w, "| machine | |\n|---|---|\n")
	fmt.Fprintf(w, "| date | %s |\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(w, "| CPU | %s |\n", cpuModel())
	fmt.Fprintf(w, "| cores | %d |\n", runtime.NumCPU())
	fmt.Fprintf(w, "| Go | %s |\n", runtime.Version())
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		if r.Load > 0 {
			lo, hi = min(lo, r.Load), max(hi, r.Load)
		}
	}
	if hi > 0 {
		fmt.Fprintf(w, "| load average while the figures were taken | %.1f – %.1f |\n", lo, hi)
	}
	fmt.Fprintln(w)
}

func writeTable(w *bytes.Buffer, t table, img string) {
	fmt.Fprintf(w, "## %s\n\n", t.name)
	fmt.Fprintf(w, "![%s](%s)\n\n", t.name, img)
	if when := measured(t.rows); when != "" {
		fmt.Fprintf(w, "%s\n\n", when)
	}
	fmt.Fprintf(w, "| | measured | range over the rounds | target | |\n|---|---:|---:|---:|---|\n")
	for _, r := range t.rows {
		rng := ""
		if r.Lo != 0 || r.Hi != 0 {
			rng = num(r.Lo, r.Unit) + " – " + num(r.Hi, r.Unit)
		}
		target, verdict := "", ""
		if r.Target != 0 {
			op := "≥"
			if r.Better == results.Lower {
				op = "≤"
			}
			target = op + " " + num(r.Target, r.Unit)
			verdict = "met"
			if !r.Met() {
				verdict = "**missed**"
			}
		}
		label := r.Row
		if r.Anchor != "" {
			label += " (against " + r.Anchor + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", label, num(r.Value, r.Unit), rng, target, verdict)
	}
	fmt.Fprintln(w)
}

// measured says when a table's figures were kept and at what load, from
// what its rows carry ("" when they carry neither).
func measured(rows []results.Row) string {
	var first, last string
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		if r.At != "" && (first == "" || r.At < first) {
			first = r.At
		}
		last = max(last, r.At)
		if r.Load > 0 {
			lo, hi = min(lo, r.Load), max(hi, r.Load)
		}
	}
	var parts []string
	switch {
	case first == "":
	case first == last:
		parts = append(parts, fmt.Sprintf("Measured %s UTC", first))
	case first[:10] == last[:10]:
		parts = append(parts, fmt.Sprintf("Measured %s–%s UTC", first, last[11:]))
	default:
		parts = append(parts, fmt.Sprintf("Measured %s – %s UTC", first, last))
	}
	switch {
	case hi > 0 && fmt.Sprintf("%.1f", lo) == fmt.Sprintf("%.1f", hi):
		parts = append(parts, fmt.Sprintf("load average %.1f", hi))
	case hi > 0:
		parts = append(parts, fmt.Sprintf("load average %.1f – %.1f", lo, hi))
	}
	if len(parts) == 0 {
		return ""
	}
	return "*" + strings.Join(parts, ", ") + ".*"
}

// num prints a figure with its unit, to the precision a reader uses.
func num(v float64, unit string) string {
	var s string
	switch {
	case unit == "×":
		return fmt.Sprintf("%.2f×", v)
	case v >= 1000:
		s = group3(fmt.Sprintf("%.0f", v))
	case v >= 100:
		s = fmt.Sprintf("%.0f", v)
	case v >= 10:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.2f", v)
	}
	return s + " " + unit
}

// group3 puts a comma between each group of three digits: 312,450.
func group3(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
