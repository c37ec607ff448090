// Package turns measures a program against its baseline in the same run:
// over a grid of cells (a message size and how many calls are in flight),
// the two take turns of a hundred calls, from a rotating start, and the
// ratio of each round is kept, so that whatever else loads the machine
// weighs on both alike and a figure is never compared with one measured at
// another time (issue 13, point 4). proxybench's relay runs and httpbench's gateway
// runs share it.
package turns

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hoist-mcp/hoist/internal/benchcmd/results"
)

// Cell is one cell of the grid: the size of the message each call carries,
// how many calls are in flight at once, and how many calls a round makes.
type Cell struct {
	Size, InFlight, Calls int
	// Sessions makes InFlight a count of sessions, each with one call in
	// flight at a time (httpbench's sessions runs), where it is otherwise
	// the calls in flight on one session or stream.
	Sessions bool
}

// String names the cell as the tables print it: "64 KiB, 8 in flight", or
// "16 B, 64 sessions".
func (c Cell) String() string {
	if c.Sessions && c.InFlight == 1 {
		return c.size() + ", 1 session"
	}
	if c.Sessions {
		return fmt.Sprintf("%s, %d sessions", c.size(), c.InFlight)
	}
	return fmt.Sprintf("%s, %d in flight", c.size(), c.InFlight)
}

// Grid returns the cells of issue 13: 16 B and 64 KiB messages, each at
// every count of calls in flight given (one and eight when none is), with
// small calls (16 B) and large calls (64 KiB) per round.
func Grid(small, large int, flights ...int) []Cell {
	if len(flights) == 0 {
		flights = []int{1, 8}
	}
	var cells []Cell
	for _, size := range []int{16, 64 << 10} {
		calls := small
		if size > 16 {
			calls = large
		}
		for _, f := range flights {
			cells = append(cells, Cell{Size: size, InFlight: f, Calls: calls})
		}
	}
	return cells
}

// ParseFlights reads a comma-separated list of counts in flight ("1,8,64").
func ParseFlights(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a count of calls in flight (1 or more)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// size names a cell's message size: "16 B", "64 KiB".
func (c Cell) size() string {
	if c.Size >= 1<<10 {
		return fmt.Sprintf("%d KiB", c.Size>>10)
	}
	return fmt.Sprintf("%d B", c.Size)
}

// Side is one of the two programs measured.
type Side struct {
	Name string
	// Run makes c.Calls calls of the cell and returns how long they took,
	// from the first request sent to the last answer read.
	Run func(c Cell) (time.Duration, error)
	// PIDs returns the processes whose CPU time is this side's own cost
	// (the relay, not the server behind it); nil counts none.
	PIDs func() []int
}

// Result holds one cell's measurements; index 0 is the baseline's, 1 the
// subject's.
type Result struct {
	Cell   Cell
	Rates  [2][]float64     // calls per second, one per round
	Ratios []float64        // the subject's rate over the baseline's, per round
	CPU    [2]time.Duration // of the sides' own processes, over every round
	Calls  int              // calls per side, over every round
}

// Ratio returns the median of the rounds' ratios.
func (r Result) Ratio() float64 { return Median(r.Ratios) }

// Run warms both sides up on every cell (a fifth of its calls, at least
// 16), then runs rounds rounds: in each, every cell once per side. Within a
// round the cell's calls are made in turns of at most Turn calls, the two
// sides alternating turn by turn from a side that alternates from cell to
// cell and round to round, so that a burst of other load lands on both
// sides of a round alike rather than on whichever side ran then. A
// round's rate of a side is its calls over the time its turns took.
func Run(rounds int, cells []Cell, base, subject Side) ([]Result, error) {
	sides := [2]Side{base, subject}
	for _, s := range sides {
		for _, c := range cells {
			warm := c
			warm.Calls = max(c.Calls/5, 16)
			if _, err := s.Run(warm); err != nil {
				return nil, fmt.Errorf("%s: warming up, %s: %w", s.Name, c, err)
			}
		}
	}
	results := make([]Result, len(cells))
	for round := range rounds {
		for ci, c := range cells {
			r := &results[ci]
			r.Cell = c
			var took [2]time.Duration
			for _, t := range Turns(c) {
				for k := range sides {
					i := (round + ci + k) % 2
					s := sides[i]
					before := s.cpu()
					d, err := s.Run(t)
					if err != nil {
						return nil, fmt.Errorf("%s: %s: %w", s.Name, c, err)
					}
					r.CPU[i] += s.cpu() - before
					took[i] += d
				}
			}
			var rate [2]float64
			for i := range sides {
				rate[i] = float64(c.Calls) / took[i].Seconds()
				r.Rates[i] = append(r.Rates[i], rate[i])
			}
			r.Ratios = append(r.Ratios, rate[1]/rate[0])
			r.Calls += c.Calls
		}
	}
	return results, nil
}

// Turn is the most calls one side makes before the other takes its turn.
// A turn of eight in flight starts with an empty pipeline and ends by
// draining it, so turns are long enough that the filling and draining
// weigh little beside the calls in between.
const Turn = 100

// TurnOf is the most calls of cell c in one turn: Turn, or four for each
// call in flight when that is more, so that a turn of 64 sessions is not
// mostly their filling and draining.
func TurnOf(c Cell) int { return max(Turn, 4*c.InFlight) }

// Turns splits a cell's calls into turns of at most Turn calls each (four
// calls for each in flight, when that is more), as even as they go: 250
// calls make turns of 84, 83 and 83.
func Turns(c Cell) []Cell {
	turn := TurnOf(c)
	n := max((c.Calls+turn-1)/turn, 1)
	out := make([]Cell, n)
	for i := range out {
		out[i] = c
		out[i].Calls = c.Calls / n
		if i < c.Calls%n {
			out[i].Calls++
		}
	}
	return out
}

func (s Side) cpu() time.Duration {
	if s.PIDs == nil {
		return 0
	}
	return CPU(s.PIDs()...)
}

// Print writes the results as a table, each cell's median calls per second
// of both sides, the median ratio, the range of ratios, each side's CPU per
// call, and the verdict against target (the least ratio). It reports
// whether every cell met the target.
func Print(w io.Writer, base, subject Side, results []Result, target float64) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t%s\t%s\tratio\tratios seen\tCPU per call: %s\t%s\ttarget\t\t\n", base.Name, subject.Name, base.Name, subject.Name)
	all := true
	for _, r := range results {
		ok := r.Ratio() >= target
		all = all && ok
		perCall := func(i int) string {
			return fmt.Sprintf("%d µs", (r.CPU[i] / time.Duration(max(r.Calls, 1))).Microseconds())
		}
		verdict := "met"
		if !ok {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f×\t%.2f–%.2f×\t%s\t%s\t≥ %s×\t%s\t\n", r.Cell, Median(r.Rates[0]), Median(r.Rates[1]),
			r.Ratio(), slices.Min(r.Ratios), slices.Max(r.Ratios), perCall(0), perCall(1), ratioLabel(target), verdict)
	}
	tw.Flush()
	return all
}

// AppendEchoCall appends a tools/call request of server-everything's echo
// tool with id and message to dst, without a line end.
func AppendEchoCall(dst []byte, id int64, message string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"`...)
	dst = append(dst, message...)
	return append(dst, `"}}}`...)
}

// Echoes reports whether answer (a line, or an HTTP body) is a result of
// the echo tool as long as message at least: server-everything answers
// "Echo: <message>" as its text.
func Echoes(answer []byte, message string) bool {
	return len(answer) >= len(message) && bytes.Contains(answer, []byte(`"text":"Echo: `))
}

// ratioLabel prints a target ratio with the digits it has: 0.95, 1.0, 3.0.
func ratioLabel(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// Compare runs the sides on cells for rounds rounds (Run) and prints the
// table under title, with note below it (Print). It reports whether every
// cell met target.
func Compare(w io.Writer, title, note string, rounds int, cells []Cell, base, subject Side, target float64) (bool, error) {
	rs, err := Run(rounds, cells, base, subject)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "%s: calls/s, %d rounds in turns, medians\n", title, rounds)
	met := Print(w, base, subject, rs, target)
	fmt.Fprintln(w, note)
	return met, results.Add(Rows(base, subject, rs, target)...)
}

// Rows are the results as figures for a results file: per cell, the
// median ratio of the subject's calls per second over the baseline's, with
// the range seen, as a line per message size over the calls in flight.
func Rows(base, subject Side, rs []Result, target float64) []results.Row {
	var out []results.Row
	for _, r := range rs {
		table, xlabel := "calls/s: "+subject.Name+" / "+base.Name, "calls in flight"
		if r.Cell.Sessions {
			table, xlabel = "calls/s over sessions: "+subject.Name+" / "+base.Name, "sessions, one call each in flight"
		}
		out = append(out, results.Row{
			Table:  table,
			Series: r.Cell.size(),
			Row:    r.Cell.String(),
			Scale:  float64(r.Cell.InFlight),
			XLabel: xlabel,
			Value:  r.Ratio(),
			Lo:     slices.Min(r.Ratios),
			Hi:     slices.Max(r.Ratios),
			Unit:   "×",
			Target: target,
			Better: results.Higher,
			Anchor: base.Name,
		})
	}
	return out
}

// RateRows are each side's own calls per second (the median of its
// rounds), as a line per side over the cells' counts in flight (or
// sessions) under table: the slope of each, beside the ratio Rows draws.
func RateRows(table string, base, subject Side, rs []Result) []results.Row {
	var out []results.Row
	for i, side := range [2]Side{base, subject} {
		for _, r := range rs {
			xlabel := "calls in flight"
			if r.Cell.Sessions {
				xlabel = "sessions, one call each in flight"
			}
			out = append(out, results.Row{
				Table:  table,
				Series: side.Name + ", " + r.Cell.size(),
				Row:    side.Name + ", " + r.Cell.String(),
				Scale:  float64(r.Cell.InFlight),
				XLabel: xlabel,
				Value:  Median(r.Rates[i]),
				Lo:     slices.Min(r.Rates[i]),
				Hi:     slices.Max(r.Rates[i]),
				Unit:   "calls/s",
				Better: results.Higher,
			})
		}
	}
	return out
}

// EchoMessage returns printable filler of n bytes that JSON carries as it
// is, with nothing to escape.
func EchoMessage(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b strings.Builder
	b.Grow(n)
	for i := range n {
		b.WriteByte(alphabet[i%len(alphabet)])
	}
	return b.String()
}

// Median returns the middle value of xs (the mean of the two middle ones
// for an even count), 0 for none. xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// CPU returns the time the processes' threads have spent on a CPU so far,
// summed from /proc/PID/task/*/schedstat (nanoseconds, where /proc/PID/stat
// counts 10 ms ticks). A thread that has exited no longer counts; the
// relays measured here (cat, Go programs, node) keep theirs for as long as
// they run. A process that is gone counts nothing.
func CPU(pids ...int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

// ChildrenNamed returns the pids of pid's children whose command is name.
func ChildrenNamed(pid int, name string) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		child, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", f, "comm")); strings.TrimSpace(string(comm)) == name {
			out = append(out, child)
		}
	}
	return out
}
