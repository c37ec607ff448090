package proccli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/procedure"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

func tau2(parts ...string) string {
	return filepath.Join(append([]string{testbin.Root(), "testdata", "tau2"}, parts...)...)
}

// sample is one recorded agent of the τ² retail sample: a session log, or
// a simulation of the results file.
type sample struct {
	name string
	args []string // what names the recording to hoist-procedure replay
	ep   func(t *testing.T) *episode.Episode
}

func samples(t *testing.T) []sample {
	logs, _ := filepath.Glob(tau2("logs", "retail", "*", "*.jsonl"))
	var out []sample
	for _, l := range logs {
		if strings.HasSuffix(l, ".context.jsonl") {
			continue
		}
		out = append(out, sample{filepath.Base(l), []string{l}, func(t *testing.T) *episode.Episode {
			ep, err := episode.ReadLog(l, episode.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return ep
		}})
	}
	results := tau2("results", "retail-gpt-4.1.json")
	eps, err := episode.ReadTau2File(results, episode.Tau2Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		_, sim, _ := strings.Cut(ep.ID, "#")
		out = append(out, sample{"results " + sim[:8], []string{"--tau2", results, "--sim", sim[:8]}, func(*testing.T) *episode.Episode { return ep }})
	}
	if len(out) != 4 {
		t.Fatalf("%d recordings in the sample, want 4", len(out))
	}
	return out
}

// replay runs hoist-procedure replay with args, then -- and the server
// command, and reads its JSON report.
func replay(t *testing.T, args []string, server ...string) *procedure.ReplayReport {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist-procedure"), append(append(append([]string{"replay", "--json", "--time-scale", "0"}, args...), "--"), server...)...)
	cmd.Env = testbin.Env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("hoist-procedure %q: %v\n%s", args, err, errb.String())
	}
	var rep procedure.ReplayReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	return &rep
}

func world(t *testing.T) []string {
	return []string{testbin.Build(t, "hoist-mcp-demo"), "--world", "tau2-retail", "--db", tau2("db", "retail.json")}
}

// TestReplayReproduces replays the τ² retail sample against τ²-bench's
// database with no flow: every turn and call is made, and every read comes
// back as recorded: those before any write, and those after.
func TestReplayReproduces(t *testing.T) {
	for _, s := range samples(t) {
		t.Run(s.name, func(t *testing.T) {
			rec := procedure.NewRecording(s.name, s.ep(t))
			rep := replay(t, s.args, world(t)...)
			if rep.TurnsMade != rec.ToolTurns || rep.TurnsSkipped != 0 || rep.CallsSkipped != 0 || rep.Lookups != 0 {
				t.Errorf("turns %d made of %d, %d skipped; %d calls skipped, %d lookups", rep.TurnsMade, rec.ToolTurns, rep.TurnsSkipped, rep.CallsSkipped, rep.Lookups)
			}
			beforeWrite := 0
			for _, tr := range rep.Turns {
				for _, c := range tr.Calls {
					if c.Matched != nil && !c.AfterWrite {
						beforeWrite++
						if !*c.Matched {
							t.Errorf("turn %d: %s %s differs from the recording", tr.Turn, c.Tool, c.Arguments)
						}
					}
				}
			}
			if beforeWrite == 0 || rep.ResultsMatched != rep.ResultsCompared {
				t.Errorf("%d of %d reads as recorded, %d before a write", rep.ResultsMatched, rep.ResultsCompared, beforeWrite)
			}
		})
	}
}

// TestReplayFlowAgreesWithAudit replays the sample through hoist-mcp --flow,
// each recording served its own task's fold, and wants exactly the turns
// hoist audit counts as saved for it, and the lookups it counts.
func TestReplayFlowAgreesWithAudit(t *testing.T) {
	flowFile := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	f, err := flow.Load(flowFile)
	if err != nil {
		t.Fatal(err)
	}
	saved := 0
	for _, s := range samples(t) {
		t.Run(s.name, func(t *testing.T) {
			ep := s.ep(t)
			if len(ep.Tools) == 0 || ep.Tools[0].InputSchema == nil {
				ep.Tools = listed(t) // a results file lists no tools: audit against what the world lists
			}
			a, err := audit.Walk(f, ep, audit.Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			ctx := filepath.Join(dir, "context.jsonl")
			proxy := []string{testbin.Build(t, "hoist-mcp"), "--flow", flowFile, "--domain", "retail", "--task-id", flow.TaskKey(ep),
				"--context", ctx, "--record", dir, "--"}
			rep := replay(t, append([]string{"--context", ctx}, s.args...), append(proxy, world(t)...)...)
			if float64(rep.TurnsSkipped) != a.Total.Saved || rep.Lookups != a.Total.Lookups || rep.LookupsUsed != a.Total.Hits {
				t.Errorf("live: %d turns skipped, %d lookups, %d used; the audit: %.0f saved, %d lookups, %d hits",
					rep.TurnsSkipped, rep.Lookups, rep.LookupsUsed, a.Total.Saved, a.Total.Lookups, a.Total.Hits)
			}
			if rep.ResultsMatched != rep.ResultsCompared {
				t.Errorf("%d of %d reads as recorded", rep.ResultsMatched, rep.ResultsCompared)
			}
			saved += rep.TurnsSkipped
			// The proxy logged the conversation the replay wrote for it.
			b, err := os.ReadFile(ctx)
			if err != nil || len(b) == 0 {
				t.Errorf("context file: %v, %d bytes", err, len(b))
			}
		})
	}
	if saved == 0 {
		t.Error("the flow saved no turn in the sample: the test compares nothing")
	}
}

// listed returns the τ² world's tools as an episode lists them.
func listed(t *testing.T) []episode.Tool {
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "tau2-retail", "--db", tau2("db", "retail.json"))
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	json.Unmarshal(out, &m)
	tools, _ := mcpmsg.ReadTools(m.Result)
	var eps []episode.Tool
	for _, tl := range tools {
		eps = append(eps, episode.Tool{Name: tl.Name, Server: "retail", Kind: episode.KindOf(tl.Annotations), InputSchema: tl.InputSchema})
	}
	return eps
}

func TestReplayFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no recording", []string{"--", "srv"}, "no recording: name a session LOG, or --tau2 FILE --sim ID"},
		{"a log and --tau2", []string{"a.jsonl", "--tau2", "r.json", "--sim", "x", "--", "srv"}, "a LOG (a.jsonl) and --tau2: name one recording"},
		{"two logs", []string{"a.jsonl", "b.jsonl", "--", "srv"}, `one session log, got ["a.jsonl" "b.jsonl"]; put the server command after --`},
		{"no sim", []string{"--tau2", "r.json", "--", "srv"}, "--tau2: name the simulation with --sim ID"},
		{"sim alone", []string{"a.jsonl", "--sim", "x", "--", "srv"}, "--sim: only with --tau2 FILE"},
		{"no server", []string{"a.jsonl"}, "no server command: put it after --, such as -- hoist-mcp-demo --world tau2-retail"},
		{"negative time scale", []string{"--time-scale", "-1", "a.jsonl", "--", "srv"}, "--time-scale -1: want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(append([]string{"replay"}, tc.args...)...)
			want := "hoist-procedure: " + tc.want + "\nRun 'hoist-procedure replay --help' for usage.\n"
			if code != 2 || stderr != want || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
			}
		})
	}
}

func TestReplayBadRecording(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"hoist_mcp_log\": 9}\n"), 0o600)
	results := tau2("results", "retail-gpt-4.1.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not a log", []string{bad}, bad + ":1: "},
		{"no such simulation", []string{"--tau2", results, "--sim", "ffff"}, results + ": no simulation ffff\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(append(append([]string{"replay"}, tc.args...), "--", "srv")...)
			if code != 2 || !strings.HasPrefix(stderr, "hoist-procedure: "+tc.want) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

func TestNewCmdReplay(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want replayOptions
	}{
		{"a log", []string{"--context", "c.jsonl", "--time-scale", "0.1", "--json", "a.jsonl", "--timeout", "3s", "--", "srv", "--json"},
			replayOptions{Log: "a.jsonl", Command: []string{"srv", "--json"}, Context: "c.jsonl", TimeScale: 0.1, Timeout: 3 * time.Second, StopGrace: DefaultStopGrace, JSON: true}},
		{"a results file, defaults", []string{"--tau2", "r.json", "--sim", "89af", "--", "srv"},
			replayOptions{Tau2: "r.json", Sim: "89af", Command: []string{"srv"}, TimeScale: 1, Timeout: procedure.DefaultCallTimeout, StopGrace: DefaultStopGrace}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *replayOptions
			cmd := newCmdReplay(&factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}},
				func(_ context.Context, o *replayOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			if _, err := cmd.ExecuteC(); err != nil || got == nil {
				t.Fatalf("err %v", err)
			}
			if diff := cmp.Diff(tc.want, *got, cmpopts.IgnoreFields(replayOptions{}, "IO")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
