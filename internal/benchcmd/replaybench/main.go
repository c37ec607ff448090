// Command replaybench measures a flow live on τ²-bench's retail logs (issue
// 16, point 5): it learns a flow from the logs with folds by task, so that
// each episode is served counts that never saw its own task, replays every
// episode through hoist-mcp --flow in front of τ²-bench's retail world
// (hoist replay), and prints the live LLM turns saved and the precision of
// the proxy's lookups beside hoist audit's offline figures for the same
// episodes and flow, the share of reads reproduced, and the replay's speed
// against a baseline run in the same process: the same recordings replayed
// straight against the world, with no proxy (hoist-procedure replay).
//
//	make build && go run ./internal/benchcmd/replaybench -tau2 ../shared/data/tau2 -time-scale 0
//
// -time-scale 1 replays with the recorded think times, as the agents took
// them (minutes: each episode lasts as long as it did); 0 replays as fast as
// the processes go, which leaves the proxy's turn inference nothing to tell
// turns apart by, but changes no decision.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/internal/cli"
)

func main() {
	tau2 := flag.String("tau2", "../shared/data/tau2", "τ²-bench's data: logs/retail and db/retail.json")
	bin := flag.String("bin", "bin", "where hoist, hoist-mcp, hoist-procedure and hoist-mcp-demo are (make build)")
	parallel := flag.Int("parallel", cli.DefaultReplayParallel, "episodes replayed at once")
	scale := flag.Float64("time-scale", 0, "times the recorded time between turns to wait (1: as recorded)")
	folds := flag.Int("folds", 5, "folds by task of the flow learned")
	flag.Parse()
	if err := run(*tau2, *bin, *parallel, *scale, *folds); err != nil {
		fmt.Fprintln(os.Stderr, "replaybench:", err)
		os.Exit(1)
	}
}

func run(tau2, bin string, parallel int, scale float64, folds int) error {
	logs := filepath.Join(tau2, "logs", "retail")
	db := filepath.Join(tau2, "db", "retail.json")
	for _, p := range []string{logs, db} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("τ²-bench's data: %w (name it with -tau2 DIR)", err)
		}
	}
	prog := func(name string) string { return filepath.Join(bin, name) }
	tmp, err := os.MkdirTemp("", "hoist-replaybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	store := filepath.Join(tmp, "retail.db")
	fl := filepath.Join(tmp, "retail.flow.json")
	if _, err := hoist(prog("hoist"), "ingest", "-q", "--sessions", logs, "--store", store); err != nil {
		return err
	}
	if _, err := hoist(prog("hoist"), "learn", "-q", "--store", store, "--domain", "retail", "--folds", strconv.Itoa(folds), "--out", fl); err != nil {
		return err
	}
	world := []string{prog("hoist-mcp-demo"), "--world", "tau2-retail", "--db", db}
	fmt.Printf("replaybench: τ²-bench retail logs in %s, flow learned with %d folds by task; %d CPUs, load average %s\n\n",
		logs, folds, runtime.NumCPU(), loadavg())

	start := time.Now()
	out, err := hoist(prog("hoist"), append([]string{"replay", "-q", "--json", "--flow", fl, "--store", store,
		"--proxy", prog("hoist-mcp"), "--parallel", strconv.Itoa(parallel), "--time-scale", strconv.FormatFloat(scale, 'g', -1, 64), "--"}, world...)...)
	if err != nil {
		return err
	}
	live := time.Since(start).Seconds()
	var rep cli.ReplayReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return fmt.Errorf("reading hoist replay's report: %w", err)
	}

	// The baseline: the same recordings straight against the world.
	var paths []string
	for _, e := range rep.Episodes {
		paths = append(paths, filepath.Join(logs, "*", e.ID+".jsonl"))
	}
	start = time.Now()
	if err := direct(prog("hoist-procedure"), paths, world, parallel, scale); err != nil {
		return err
	}
	base := time.Since(start).Seconds()

	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	ci := func(i *audit.Interval) string {
		if i == nil {
			return "-"
		}
		return fmt.Sprintf("%s (%s–%s)", pct(i.Value), pct(i.Lo), pct(i.Hi))
	}
	for _, d := range rep.Domains {
		fmt.Printf("%s: %d episodes, %d LLM turns, %d of them calling tools\n", d.Domain, d.Episodes, d.LLMTurns, d.ToolTurns)
		fmt.Printf("  live (hoist replay)   turns saved %d: %s of LLM turns, %s of tool-calling turns; %d lookups, precision %s\n",
			d.Saved, pct(d.SavedOfLLMTurns), ci(&d.Live.Total.Saved), d.Lookups, ci(d.Live.Total.Precision))
		fmt.Printf("  offline (hoist audit) turns saved %.0f: %s of LLM turns, %s of tool-calling turns; %d lookups, precision %s\n",
			d.OfflineSaved, pct(d.OfflineOfLLMTurns), ci(&d.Audit.Total.Saved), d.OfflineLookups, ci(d.Audit.Total.Precision))
		fmt.Printf("  the same turns saved in %d of %d episodes; reads as recorded %d of %d (%d byte for byte); turns inferred from the live logs as made in %d of %d\n",
			d.Agree, d.Episodes-d.Failed, d.ResultsMatched, d.ResultsCompared, d.ResultsIdentical, d.InferenceAgreed, d.InferenceChecked)
	}
	n := float64(len(rep.Episodes))
	fmt.Printf("\nspeed at time scale %g, %d at a time: through hoist-mcp --flow %.2f episodes/s (%.1f s), straight to the world %.2f episodes/s (%.1f s): %.0f%% of the baseline\n",
		scale, parallel, n/live, live, n/base, base, 100*base/live)
	fmt.Printf("load average %s at the end\n", loadavg())
	return nil
}

// hoist runs a program and returns its stdout; a failure carries its
// stderr.
func hoist(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(prog, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", filepath.Base(prog), args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// direct replays each log straight against the world, parallel at a time.
func direct(procedure string, globs, world []string, parallel int, scale float64) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	work := make(chan string)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				found, _ := filepath.Glob(g)
				if len(found) != 1 {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %d logs", g, len(found)))
					mu.Unlock()
					continue
				}
				args := append([]string{"replay", "--json", "--time-scale", strconv.FormatFloat(scale, 'g', -1, 64), found[0], "--"}, world...)
				if _, err := hoist(procedure, args...); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, g := range globs {
		work <- g
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
