package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// tau2Results are the τ²-bench results files of testdata: two retail
// episodes of gpt-4.1 (reward 1), and three airline episodes.
func tau2Results() []string {
	dir := filepath.Join(testbin.Root(), "testdata", "tau2", "results")
	return []string{
		filepath.Join(dir, "retail-gpt-4.1.json"),
		filepath.Join(dir, "airline-gpt-4o.json"),
		filepath.Join(dir, "airline-gpt-oss-120b-langchain.json"),
	}
}

// guardsReport runs hoist guards --json with args and reads its report.
func guardsReport(t *testing.T, args ...string) guards.Report {
	t.Helper()
	r := mustRun(t, append([]string{"guards", "--json"}, args...)...)
	var rep guards.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("hoist guards --json: %v\n%s", err, r.stdout)
	}
	return rep
}

func ruleTally(t *testing.T, rep guards.Report, id string) guards.RuleTally {
	t.Helper()
	for _, rt := range rep.Rules {
		if rt.Rule == id {
			return rt
		}
	}
	t.Fatalf("no row for rule %s in %+v", id, rep.Rules)
	return guards.RuleTally{}
}

// refusalKey names a listed refusal for comparison.
func refusalKey(f guards.Refusal) string {
	return strings.Join([]string{f.Rule, f.Tool, "task " + f.TaskID, string(f.Group)}, " ")
}

// TestGuardsOverTau2Results: hoist guards over the τ² sample counts every
// episode and write by reward, has a row for every rule of both domains,
// and lists each write a rule would refuse with its episode, call and
// reason. In task 27 the agent asked for a refund to a gift card the user
// does not have, then tried the return again once the order's status had
// moved on: the server failed both, and the rules refuse both.
func TestGuardsOverTau2Results(t *testing.T) {
	rep := guardsReport(t, append([]string{"--tau2"}, tau2Results()...)...)
	if want := (guards.Split{All: 5, Reward1: 4, Below1: 1}); rep.Episodes != want {
		t.Errorf("episodes %+v, want %+v", rep.Episodes, want)
	}
	if want := (guards.Split{All: 7, Reward1: 4, Below1: 3}); rep.Writes != want {
		t.Errorf("writes %+v, want %+v", rep.Writes, want)
	}
	for _, domain := range guards.Domains() {
		rules, _ := guards.Rules(domain)
		for _, r := range rules {
			if got := ruleTally(t, rep, r.ID); got.Mode != r.Default {
				t.Errorf("%s: mode %s, want its default %s", r.ID, got.Mode, r.Default)
			}
		}
	}
	if got := ruleTally(t, rep, "retail.payment_method"); got.Refused.Reward1 != 1 || got.Checked.Reward1 != 4 || got.RefusedDone.All != 0 {
		t.Errorf("retail.payment_method: %+v, want 1 of 4 refused in reward 1, none the server did", got.Tally)
	}
	if got := ruleTally(t, rep, "airline.payment"); got.Lacked.Below1 != 3 || got.Refused.All != 0 {
		t.Errorf("airline.payment: %+v, want 3 lacking a fact, none refused", got.Tally)
	}
	// Two writes refused, each counted once however many rules refuse it.
	if rep.Enforced.Refused.All != 2 || rep.Every.Refused.All != 2 {
		t.Errorf("totals: enforced %+v, every rule %+v; want 2 writes refused in each", rep.Enforced.Refused, rep.Every.Refused)
	}
	var got []string
	for _, f := range rep.Refusals {
		got = append(got, refusalKey(f))
		if f.Reason == "" || f.Episode == "" || f.ServerDid || f.Reward == nil || *f.Reward != 1 {
			t.Errorf("refusal %+v: want a reason, an episode, reward 1 and a write the server failed", f)
		}
		if !strings.HasPrefix(f.Episode, "retail-gpt-4.1#") {
			t.Errorf("refusal in %q, want an episode of retail-gpt-4.1", f.Episode)
		}
	}
	want := []string{
		"retail.payment_method return_delivered_order_items task 27 reward_1",
		"retail.refund_destination return_delivered_order_items task 27 reward_1",
		"retail.order_status return_delivered_order_items task 27 reward_1",
		"retail.confirmed return_delivered_order_items task 27 reward_1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	if f := rep.Refusals[0]; !strings.Contains(f.Reason, "gift_card_0000000 is not one of isabella_johansson_2152's payment methods") || f.Call != 8 {
		t.Errorf("first refusal: call %d, %q", f.Call, f.Reason)
	}
}

// TestGuardsModes: --guard sets a rule's mode as hoist-mcp's does. With
// retail.order_status off, the second write of task 27 is refused only by
// the confirmation rule, which logs: one write is left in the enforced
// total, two in every rule's.
func TestGuardsModes(t *testing.T) {
	rep := guardsReport(t, "--guard", "retail.order_status=off", "--tau2", tau2Results()[0])
	if got := ruleTally(t, rep, "retail.order_status"); got.Mode != guards.Off || got.Checked.All != 0 {
		t.Errorf("retail.order_status off: %+v", got)
	}
	if rep.Enforced.Refused.All != 1 || rep.Every.Refused.All != 2 {
		t.Errorf("totals: enforced %+v, every rule %+v; want 1 and 2", rep.Enforced.Refused, rep.Every.Refused)
	}
}

// TestGuardsOverSessions: the same trajectories recorded as session logs
// (with their .meta.json rewards) give the same counts, and name the
// session of each refusal.
func TestGuardsOverSessions(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	copyTestdata(t, filepath.Join("tau2", "logs"), logs)
	rep := guardsReport(t, "--sessions", logs, "--store", filepath.Join(dir, "hoist.db"))
	if want := (guards.Split{All: 5, Reward1: 4, Below1: 1}); rep.Episodes != want {
		t.Errorf("episodes %+v, want %+v", rep.Episodes, want)
	}
	if rep.Enforced.Refused != (guards.Split{All: 2, Reward1: 2}) {
		t.Errorf("enforced refusals %+v, want 2 in reward 1", rep.Enforced.Refused)
	}
	for _, f := range rep.Refusals {
		if f.Episode != "20250801T161636.780Z-42820" || f.ID == "" {
			t.Errorf("refusal in %q (id %q), want the session 20250801T161636.780Z-42820 and the call's id", f.Episode, f.ID)
		}
	}
	text := mustRun(t, "guards", "--sessions", logs, "--store", filepath.Join(dir, "hoist.db"), "--domain", "retail")
	for _, want := range []string{`retail\.payment_method +enforce +4 +1 +0 +1/4 \(25\.0%\)`, `Writes a rule would refuse \(4\):`, `in 20250801T161636\.780Z-42820`} {
		if !regexp.MustCompile(want).MatchString(text.stdout) {
			t.Errorf("text report lacks %q:\n%s", want, text.stdout)
		}
	}
	if strings.Contains(text.stdout, "airline.") {
		t.Errorf("--domain retail reports airline rules:\n%s", text.stdout)
	}
}

// TestGuardsBadInput: each mistake is one line naming the flag, exit 2; a
// results file that cannot be read, exit 1.
func TestGuardsBadInput(t *testing.T) {
	results := tau2Results()[0]
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "say what to check: --tau2"},
		{[]string{"--tau2", results, "--guard", "retail.nope=enforce"}, 2, "--guard retail.nope=enforce: no rule retail.nope"},
		{[]string{"--tau2", results, "--guard", "retail.confirmed=maybe"}, 2, `--guard retail.confirmed=maybe: mode "maybe": want enforce, log or off`},
		{[]string{"--tau2", results, "--domain", "shipping"}, 2, `--domain: no guards for domain "shipping"`},
		{[]string{"--tau2", filepath.Join(t.TempDir(), "none.json")}, 1, "reading τ²-bench results: open "},
		{[]string{"--tau2", results, "--domain", "airline"}, 1, "no episodes to check"},
	} {
		r := run(t, nil, append([]string{"guards"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("hoist guards %q: exit %d, %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

// recordRefusedCancel records, through a real hoist-mcp --guards in front
// of the demo's retail world, a customer whose cancellation gives a reason
// the policy does not accept, with the proxy's flags before the server.
func recordRefusedCancel(t *testing.T, dir string, flags ...string) {
	t.Helper()
	args := append(append([]string{"--record", dir, "--domain", "retail", "--guards"}, flags...), "--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), args...)
	cmd.Env = testbin.Env()
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_user_id_by_email","arguments":{"email":"c7@example.com"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W7a"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W7a","reason":"found it cheaper"}}}`,
	}, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hoist-mcp: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"id":4`) {
		t.Fatalf("no answer to the cancellation:\n%s", stdout.String())
	}
}

// hoist guards says who stopped a write it would refuse (issue 24, point
// 5): the proxy, when it enforced the rule (the server never saw the
// write), or the server, when the proxy only logged the rule's verdict and
// the server failed the write by itself. Recorded by the real proxy in
// front of the demo; the report's mode is the one hoist guards checks
// with (the default, enforce), in both.
func TestGuardsSaysWhoRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		fate  guards.Fate
		says  string
	}{
		{"enforced", nil, guards.ProxyRefused, "(enforced, refused by the proxy, reward unknown) call 2: cancel_pending_order"},
		{"logged", []string{"--guard", "retail.cancel_reason=log"}, guards.ServerFailed, "(enforced, failed at the server, reward unknown) call 2: cancel_pending_order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logs := filepath.Join(dir, "logs")
			recordRefusedCancel(t, logs, tc.flags...)
			rep := guardsReport(t, "--sessions", logs, "--store", filepath.Join(dir, "hoist.db"))
			var got []string
			for _, f := range rep.Refusals {
				got = append(got, fmt.Sprintf("%s %s %s server_did=%v", f.Rule, f.Tool, f.Fate, f.ServerDid))
			}
			want := []string{fmt.Sprintf("retail.cancel_reason cancel_pending_order %s server_did=false", tc.fate)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refusals (-want +got):\n%s", diff)
			}
			text := mustRun(t, "guards", "--sessions", logs, "--store", filepath.Join(dir, "hoist.db"))
			if !strings.Contains(text.stdout, tc.says) {
				t.Errorf("the text report does not say %q:\n%s", tc.says, text.stdout)
			}
		})
	}
}
