// Package results keeps the figures of a benchmark run as JSON lines, one
// per figure, so that one script can run every benchmark and another draw
// them (internal/benchcmd/benchdoc). A benchmark adds its figures with Add;
// they go to the file HOIST_BENCH_RESULTS names, and nowhere when it is
// unset, so a benchmark run by hand prints its tables and nothing more.
package results

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Env names the file the figures are appended to.
const Env = "HOIST_BENCH_RESULTS"

// Better says which way a figure improves.
const (
	Higher = "higher"
	Lower  = "lower"
)

// Row is one figure. Rows of one Table are drawn as one chart: a bar per
// Row, or, when the rows carry a Scale, a line per Series over the scale.
type Row struct {
	Table  string  `json:"table"`            // the chart: "stdio --record / cat relay"
	Series string  `json:"series,omitempty"` // a line of a scale chart: "16 B"
	Row    string  `json:"row"`              // the bar or point: "16 B, 8 in flight"
	Scale  float64 `json:"scale,omitempty"`  // the point's place on a scale chart's x axis: 8
	XLabel string  `json:"x_label,omitempty"`
	Value  float64 `json:"value"`
	Lo     float64 `json:"lo,omitempty"` // the range seen over the rounds, when there were rounds
	Hi     float64 `json:"hi,omitempty"`
	Unit   string  `json:"unit"`             // "×", "µs", "rows/s"
	Target float64 `json:"target,omitempty"` // 0: none
	Better string  `json:"better"`           // Higher or Lower
	Anchor string  `json:"anchor,omitempty"` // what the figure is measured against, in the same run
	Load   float64 `json:"load,omitempty"`   // the machine's load average (1 minute) when the figure was kept; Add fills it
	At     string  `json:"at,omitempty"`     // when the figure was kept, UTC ("2006-01-02 15:04"); Add fills it
}

// loadavg reads the one-minute load average, 0 where there is none.
func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

// Met reports whether the row meets its target (true when it has none).
func (r Row) Met() bool {
	if r.Target == 0 {
		return true
	}
	if r.Better == Lower {
		return r.Value <= r.Target
	}
	return r.Value >= r.Target
}

var mu sync.Mutex

// Add appends rows to the file HOIST_BENCH_RESULTS names; without it, it
// does nothing.
func Add(rows ...Row) error {
	path := os.Getenv(Env)
	if path == "" || len(rows) == 0 {
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", Env, err)
	}
	enc := json.NewEncoder(f)
	load := loadavg()
	at := time.Now().UTC().Format("2006-01-02 15:04")
	for _, r := range rows {
		if r.Load == 0 {
			r.Load = load
		}
		if r.At == "" {
			r.At = at
		}
		if r.Better != Higher && r.Better != Lower {
			f.Close()
			return fmt.Errorf("results: row %q of %q: better is %q, want %q or %q", r.Row, r.Table, r.Better, Higher, Lower)
		}
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// Must is Add for a benchmark's main: a figure that cannot be kept ends
// the run, which would otherwise print a table and chart nothing.
func Must(rows ...Row) {
	if err := Add(rows...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
