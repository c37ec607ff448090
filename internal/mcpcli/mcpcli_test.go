package mcpcli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/proxy"
	"github.com/hoist-mcp/hoist/toolpin"
)

// env is the environment the tests' --upstream-header reads.
var env = map[string]string{"ORDERS_AUTH": "Bearer s3cret"}

func lookupEnv(name string) (string, bool) {
	v, ok := env[name]
	return v, ok
}

// parse runs hoist-mcp's command line with a runF that captures the
// options, and returns them (nil when the command did not get that far).
func parse(t *testing.T, args ...string) (*options, string, error) {
	t.Helper()
	var stderr bytes.Buffer
	var got *options
	cmd := newCmd(&factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &stderr, Err: &stderr}, LookupEnv: lookupEnv},
		func(_ context.Context, o *options) error { got = o; return nil })
	cmd.SetArgs(args)
	_, err := cmd.ExecuteC()
	return got, stderr.String(), err
}

// defaults are proxy.Options as the flags leave them.
func defaults(o proxy.Options) proxy.Options {
	if o.MaxFrameBytes == 0 {
		o.MaxFrameBytes = proxy.DefaultMaxFrameBytes
	}
	if o.StopGrace == 0 {
		o.StopGrace = proxy.DefaultStopGrace
	}
	return o
}

func TestNewCmd(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		proxy    proxy.Options
		listen   proxy.ListenOptions
		flowFile string
	}{
		{
			name: "the server command after --, with flags of its own",
			args: []string{"--record", "/var/log/hoist", "--domain", "orders", "--agent-model", "m1", "--server-name", "tickets",
				"--trace", "--retain-days", "3", "--max-frame-bytes", "2048", "--stop-grace", "2s", "--", "srv", "--record", "x", "--", "y"},
			proxy: proxy.Options{Command: []string{"srv", "--record", "x", "--", "y"}, Record: "/var/log/hoist", Domain: "orders",
				AgentModel: "m1", ServerName: "tickets", Trace: true, RetainDays: 3, MaxFrameBytes: 2048, StopGrace: 2 * time.Second},
		},
		{
			name:  "everything from the server command on is the server's, -- or not",
			args:  []string{"--domain", "d", "srv", "--domain", "e", "--help"},
			proxy: defaults(proxy.Options{Command: []string{"srv", "--domain", "e", "--help"}, Domain: "d"}),
		},
		{
			name:  "~ in --record and --context",
			args:  []string{"--record", "~/logs", "--context", "~/ctx/{session}.jsonl", "--inherit-stderr", "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Record: filepath.Join(home, "logs"), Context: filepath.Join(home, "ctx", "{session}.jsonl"), InheritStderr: true}),
		},
		{
			name:   "--listen",
			args:   []string{"--listen", "127.0.0.1:8931", "--listen-token-file", token, "--listen-idle", "1.5", "--", "srv"},
			proxy:  defaults(proxy.Options{Command: []string{"srv"}}),
			listen: proxy.ListenOptions{Addr: "127.0.0.1:8931", Token: "tok-123", Idle: 90 * time.Second},
		},
		{
			name:  "--console with its token",
			args:  []string{"--console", "127.0.0.1:8940", "--console-token-file", token, "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Console: &proxy.ConsoleOptions{Addr: "127.0.0.1:8940", Token: "tok-123"}}),
		},
		{
			name:   "--console over --listen, waiting for it",
			args:   []string{"--console", "127.0.0.1:8940", "--wait-for-attach", "--listen", "127.0.0.1:0", "--", "srv"},
			proxy:  defaults(proxy.Options{Command: []string{"srv"}, Console: &proxy.ConsoleOptions{Addr: "127.0.0.1:8940", WaitForAttach: true}}),
			listen: proxy.ListenOptions{Addr: "127.0.0.1:0", Idle: proxy.DefaultListenIdle},
		},
		{
			name:   "--listen's default idle",
			args:   []string{"--listen", "127.0.0.1:0", "--", "srv"},
			proxy:  defaults(proxy.Options{Command: []string{"srv"}}),
			listen: proxy.ListenOptions{Addr: "127.0.0.1:0", Idle: proxy.DefaultListenIdle},
		},
		{
			name: "--upstream with a header read from the environment",
			args: []string{"--upstream", "https://example.com/mcp", "--upstream-header", "Authorization=ORDERS_AUTH"},
			proxy: defaults(proxy.Options{Upstream: "https://example.com/mcp",
				UpstreamHeader: http.Header{"Authorization": {"Bearer s3cret"}}}),
		},
		{
			name: "every --flow flag",
			args: []string{"--flow", "retail.flow.json", "--flow-threshold", "0.5", "--flow-decider", "habit", "--flow-tools", "a,b",
				"--flow-per-call", "2", "--flow-per-session", "5", "--flow-questions", "7", "--flow-max-bytes", "100", "--flow-log", "~/flows/{session}.jsonl",
				"--flow-shadow", "--flow-explore", "0.25", "--flow-explore-seed", "9", "--task-id", "t1", "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Flow: &proxy.FlowOptions{
				Rule:   flow.Rule{Decider: flow.Habit, Threshold: 0.5, Epsilon: 0.25},
				Caps:   flow.Caps{PerCall: 2, PerSession: 5, Questions: 7, MaxBytes: 100},
				Tools:  []string{"a", "b"},
				Log:    filepath.Join(home, "flows", "{session}.jsonl"),
				Shadow: true, Seed: 9, SeedSet: true, TaskID: "t1",
			}}),
			flowFile: "retail.flow.json",
		},
		{
			// The caps keep their defaults, Questions included: a session's
			// caps of all zeros would read as "unset".
			name: "--flow's defaults",
			args: []string{"--flow", "retail.flow.json", "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Flow: &proxy.FlowOptions{
				// No decider named: the session takes the flow's own (the
				// arbiter, when it has one).
				Rule: flow.Rule{Threshold: flow.DefaultThreshold},
				Caps: flow.DefaultCaps,
			}}),
			flowFile: "retail.flow.json",
		},
		{
			// 150 tokens a detour, 500 a turn: the threshold is their ratio.
			name: "--detour-cost and --turn-value give the threshold",
			args: []string{"--flow", "retail.flow.json", "--detour-cost", "150", "--turn-value", "500", "--flow-decider", "arbiter", "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Flow: &proxy.FlowOptions{
				Rule: flow.Rule{Decider: flow.ArbiterDecider, Threshold: 0.3},
				Caps: flow.DefaultCaps,
			}}),
			flowFile: "retail.flow.json",
		},
		{
			name: "--guards with its modes and log, and --commit",
			args: []string{"--domain", "retail", "--guards", "--guard", "retail.confirmed=off", "--guard", "retail.one_user=log",
				"--guards-log", "~/guards/{session}.jsonl", "--commit", "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Domain: "retail", Commit: true, Guards: &proxy.GuardsOptions{
				Domain: "retail", Modes: map[string]guards.Mode{"retail.confirmed": guards.Off, "retail.one_user": guards.Log},
				Log: filepath.Join(home, "guards", "{session}.jsonl"),
			}}),
		},
		{
			name:  "--commit alone",
			args:  []string{"--commit", "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Commit: true}),
		},
		{
			name: "an empty --flow-tools allows no tool",
			args: []string{"--flow", "f.json", "--flow-tools=", "--", "srv"},
			proxy: defaults(proxy.Options{Command: []string{"srv"}, Flow: &proxy.FlowOptions{
				Rule: flow.Rule{Threshold: flow.DefaultThreshold}, Caps: flow.DefaultCaps, Tools: []string{},
			}}),
			flowFile: "f.json",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stderr, err := parse(t, tc.args...)
			if err != nil || got == nil {
				t.Fatalf("err %v, stderr %q", err, stderr)
			}
			if diff := cmp.Diff(tc.proxy, got.Proxy); diff != "" {
				t.Errorf("proxy options (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.listen, got.Listen); diff != "" {
				t.Errorf("listen options (-want +got):\n%s", diff)
			}
			if got.FlowFile != tc.flowFile {
				t.Errorf("flow file %q, want %q", got.FlowFile, tc.flowFile)
			}
			if got.Proxy.Flow != nil && got.Proxy.Flow.Flow != nil {
				t.Error("the flow was read while parsing flags: a bad flow file is not a usage mistake")
			}
		})
	}
}

// run runs Main in this process; no case here gets as far as the proxy.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, iostreams.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // the first line of stderr, after "hoist-mcp: "
	}{
		{"unknown flag", []string{"--no-such-flag", "--", "srv"}, "unknown flag: --no-such-flag"},
		{"bad number", []string{"--max-frame-bytes", "lots", "--", "srv"}, `invalid argument "lots" for "--max-frame-bytes" flag: strconv.ParseInt: parsing "lots": invalid syntax`},
		{"missing value", []string{"--record"}, "flag needs an argument: --record"},
		{"both upstream and command", []string{"--upstream", "http://127.0.0.1:1/mcp", "--", "srv"}, "--upstream: give either a server URL or a server command after --, not both"},
		{"header without upstream", []string{"--upstream-header", "A=B", "--", "srv"}, "--upstream-header: needs --upstream"},
		{"header from an unset variable", []string{"--upstream", "http://127.0.0.1:1/mcp", "--upstream-header", "Authorization=NOPE"}, "--upstream-header Authorization=NOPE: environment variable NOPE is not set"},
		{"flow flag without --flow", []string{"--flow-shadow", "--", "srv"}, "--flow-shadow: needs --flow"},
		{"unknown decider", []string{"--flow", "f.json", "--flow-decider", "oracle", "--", "srv"}, `--flow-decider: unknown decider "oracle": want arbiter, reach or habit`},
		{"both thresholds", []string{"--flow", "f.json", "--flow-threshold", "0.2", "--detour-cost", "1", "--", "srv"}, "--flow-threshold: give it, or --detour-cost and --turn-value, not both"},
		{"no turn value", []string{"--flow", "f.json", "--turn-value", "0", "--", "srv"}, "--turn-value: must be more than 0"},
		{"negative byte cap", []string{"--flow", "f.json", "--flow-max-bytes", "-1", "--", "srv"}, "--flow-max-bytes: must be 0 or more"},
		{"cost without --flow", []string{"--detour-cost", "1", "--", "srv"}, "--detour-cost: needs --flow"},
		{"threshold out of range", []string{"--flow", "f.json", "--flow-threshold", "2", "--", "srv"}, "--flow-threshold: must be between 0 and 1"},
		{"listen flag without --listen", []string{"--listen-idle", "3", "--", "srv"}, "--listen-token-file and --listen-idle need --listen"},
		{"guards without a domain", []string{"--guards", "--", "srv"}, "--guards: needs --domain airline or retail, the policy to check the writes against"},
		{"guards of a domain without rules", []string{"--guards", "--domain", "orders", "--", "srv"}, `--guards: --domain orders: no guards for domain "orders": want airline or retail`},
		{"a guard flag without --guards", []string{"--guard", "retail.confirmed=log", "--", "srv"}, "--guard: needs --guards"},
		{"an unknown rule", []string{"--domain", "retail", "--guards", "--guard", "retail.nope=log", "--", "srv"}, "--guard retail.nope=log: no rule retail.nope (docs/guards.md lists them)"},
		{"a rule of another domain", []string{"--domain", "retail", "--guards", "--guard", "airline.cabin=log", "--", "srv"}, "--guard: no rule airline.cabin in domain retail: the rules are retail.cancel_reason, retail.order_status, retail.once_per_order, retail.same_product, retail.payment_method, retail.gift_card_balance, retail.refund_destination, retail.one_user, retail.confirmed"},
		{"the word list enforced", []string{"--domain", "airline", "--guards", "--guard", "airline.confirmed=enforce", "--", "srv"}, "--guard airline.confirmed=enforce: airline.confirmed is only logged, since its word list cannot tell a confirmation from a request (hoist guards can count what it would refuse)"},
		{"an unknown mode", []string{"--domain", "retail", "--guards", "--guard", "retail.confirmed=maybe", "--", "srv"}, `--guard retail.confirmed=maybe: mode "maybe": want enforce, log or off`},
		{"console token without --console", []string{"--console-token-file", "t", "--", "srv"}, "--console-token-file: needs --console"},
		{"console not host:port", []string{"--console", "8940", "--", "srv"}, "--console 8940: want host:port (address 8940: missing port in address)"},
		{"wait for attach without --console", []string{"--wait-for-attach", "--", "srv"}, "--wait-for-attach: needs --console"},
		{"a limit without a period", []string{"--limit", "lookup=10", "--", "srv"}, `--limit "lookup=10": want TOOL=N/PERIOD, such as lookup=10/1m or '*=100/h'`},
		{"a limit of no calls", []string{"--limit", "lookup=0/m", "--", "srv"}, `--limit "lookup=0/m": N must be a whole number of calls, at least 1`},
		{"a limit's unknown period", []string{"--limit", "*=5/week", "--", "srv"}, `--limit "*=5/week": PERIOD must be a duration such as s, m, h, 10s or 1m30s`},
		{"a pin action without --pin-tools", []string{"--pin-tools-action", "hide", "--", "srv"}, "--pin-tools-action: needs --pin-tools"},
		{"an unknown pin action", []string{"--pin-tools", "x.pin.json", "--pin-tools-action", "smash", "--", "srv"}, `--pin-tools-action "smash": want warn, hide or hold`},
		{"an unknown action for new tools", []string{"--pin-tools", "x.pin.json", "--pin-tools-new", "drop", "--", "srv"}, `--pin-tools-new "drop": want warn, hide or hold`},
		{"a pin file that is not there", []string{"--pin-tools", "no-such.pin.json", "--", "srv"}, "--pin-tools: open no-such.pin.json: no such file or directory"},
		{"a negative budget", []string{"--max-calls", "-1", "--", "srv"}, "--max-calls: must be 0 or more"},
		{"unknown shell", []string{"--completion", "tcsh"}, `--completion "tcsh": want bash, zsh, fish, powershell`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			want := "hoist-mcp: " + tc.want + "\nRun 'hoist-mcp --help' for usage.\n"
			if code != 2 || stderr != want || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
			}
		})
	}
}

func TestNoServerCommand(t *testing.T) {
	code, stdout, stderr := run(t, "--record", "/tmp/x")
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "hoist-mcp: no server command; put it after --, for example:\n") ||
		!strings.HasSuffix(stderr, "\nRun 'hoist-mcp --help' for every option.\n") || strings.Contains(stderr, "for usage") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and the recipe", code, stdout, stderr)
	}
}

func TestHelpAndVersion(t *testing.T) {
	code, stdout, stderr := run(t, "--help")
	if code != 0 || stdout != "" {
		t.Errorf("--help: exit %d, stdout %q; want 0 and nothing on stdout, the wire", code, stdout)
	}
	for _, want := range []string{"Usage:\n  hoist-mcp [flags]", "--record DIR", "--completion SHELL", "Examples:", "125: the proxy itself failed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	code, stdout, stderr = run(t, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "hoist-mcp ") || stderr != "" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestCompletion: --completion SHELL prints a script on stdout, and the
// script's requests (__complete) are answered on stdout too, though help
// goes to stderr.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "complete -o default -F __start_hoist-mcp hoist-mcp",
		"zsh":        "#compdef hoist-mcp",
		"fish":       "complete -c hoist-mcp",
		"powershell": "Register-ArgumentCompleter -CommandName 'hoist-mcp'",
	} {
		code, stdout, stderr := run(t, "--completion", shell)
		if code != 0 || !strings.Contains(stdout, want) || stderr != "" {
			t.Errorf("--completion %s: exit %d, stderr %q, stdout lacks %q:\n%.300s", shell, code, stderr, want, stdout)
		}
	}
	code, stdout, stderr := run(t, "__complete", "--flow-")
	if code != 0 || !strings.Contains(stdout, "--flow-shadow\t") || !strings.Contains(stdout, "--flow-per-session\t") || strings.Contains(stdout, "--record") {
		t.Errorf("__complete --flow-: exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	code, stdout, _ = run(t, "__complete", "--completion", "")
	if code != 0 || !strings.Contains(stdout, "bash\n") || !strings.Contains(stdout, "powershell\n") {
		t.Errorf("__complete --completion '': exit %d, stdout %q", code, stdout)
	}
}

// TestCallsFlags: --limit, --max-calls and --pin-tools reach the proxy's
// options; a pin file edited by hand without its digest is refused,
// naming the member.
func TestCallsFlags(t *testing.T) {
	dir := t.TempDir()
	def := `{"name":"lookup","description":"Reads nothing."}`
	good := `{"hoist_tool_pin":1,"server":"demo","pinned_from":"","pinned_unix_ms":0,"tools":[{"name":"lookup","digest":"` + toolpin.Digest([]byte(def)) + `","definition":` + def + `}]}`
	pin := filepath.Join(dir, "demo.pin.json")
	if err := os.WriteFile(pin, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	o, stderr, err := parse(t, "--limit", "lookup=2/m", "--limit", "*=100/h", "--max-calls", "50", "--pin-tools", pin, "--pin-tools-action", "hide", "--", "srv")
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	l := o.Proxy.Limits
	if l == nil || l.MaxCalls != 50 || len(l.Rules) != 2 || l.Rules[0].Tool != "lookup" || l.Rules[0].N != 2 || l.Rules[0].Per != time.Minute || l.Rules[1].Tool != "*" {
		t.Errorf("limits %+v", l)
	}
	p := o.Proxy.Pins
	if p == nil || p.Changed != "hide" || p.Added != "warn" || len(p.Tools) != 1 || p.Tools[0].Name != "lookup" {
		t.Errorf("pins %+v", p)
	}
	edited := strings.Replace(good, "Reads nothing.", "Reads your keys.", 1)
	if err := os.WriteFile(pin, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "--pin-tools", pin, "--", "srv")
	if code != 2 || !strings.Contains(stderr, "--pin-tools "+pin+": tools[0].digest: ") || !strings.Contains(stderr, "was it edited?") {
		t.Errorf("an edited pin file: exit %d, %s", code, stderr)
	}
}
