package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/oracletest"
	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/mcplog"
)

// lookupAsked is the flow's question's words (oracle.Lookup), as the model
// server receives them.
const lookupAsked = "Will the agent use this lookup's result before it changes anything?"

// recordRetail records n sessions in front of the demo's retail world with
// --context, each customer naming one of their two orders, and returns the
// log directory.
func recordRetail(t *testing.T, dir string, n int) string {
	t.Helper()
	logs := filepath.Join(dir, "rec")
	for i := 1; i <= n; i++ {
		order := fmt.Sprintf("#W%d%c", i, "ab"[i%2])
		ctx := filepath.Join(dir, fmt.Sprintf("ctx%d.jsonl", i))
		p := startRetail(t, logs, ctx, fmt.Sprintf("learn-%d", i))
		p.start(t)
		say(t, ctx, fmt.Sprintf("Hello, I am c%d@example.com and I want to cancel my order %s.", i, order))
		p.request(t, 2, "tools/call", fmt.Sprintf(`{"name":"find_user_id_by_email","arguments":{"email":"c%d@example.com"}}`, i))
		p.request(t, 3, "tools/call", fmt.Sprintf(`{"name":"get_user_details","arguments":{"user_id":"user_%d"}}`, i))
		p.request(t, 4, "tools/call", fmt.Sprintf(`{"name":"get_order_details","arguments":{"order_id":%q}}`, order))
		p.request(t, 5, "tools/call", fmt.Sprintf(`{"name":"cancel_pending_order","arguments":{"order_id":%q,"reason":"no longer needed"}}`, order))
		p.close(t)
	}
	return logs
}

// lookupQuestions counts the requests that put the flow's question.
func lookupQuestions(reqs []oracletest.Request) int {
	n := 0
	for _, r := range reqs {
		if bytes.Contains(r.Body, []byte(lookupAsked)) {
			n++
		}
	}
	return n
}

// flowOffers reads the offers of a flow log's decisions, in order.
func flowOffers(t *testing.T, path string) []mcplog.FlowOffer {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mcplog.FlowOffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var d mcplog.FlowDecision
		if json.Unmarshal(sc.Bytes(), &d) == nil && d.Type == mcplog.TypeDecision {
			out = append(out, d.Offers...)
		}
	}
	return out
}

// noSecret fails when any file below dir holds secret.
func noSecret(t *testing.T, dir, secret string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walking %s: %v (%d files)", dir, err, n)
	}
}

// hoist learn --oracle jev asks the flow's question about the arbiter's
// training offers on the wire and fits an "oracle" weight; --oracle replay
// learns the identical flow from the cache alone; mock is deterministic;
// hoist-mcp serving that flow asks the question on the wire, logs its key
// and answer in the flow log's offers, and stops asking once
// --flow-questions are spent. The key is in no file the run wrote.
func TestFlowQuestionsLearnedAndServed(t *testing.T) {
	const secret = "sk-flow-questions-7373"
	dir := t.TempDir()
	logs := recordRetail(t, dir, 8)
	srv := oracletest.Start(t)
	srv.Default(oracletest.WithLogprobs(0.8))
	cache := filepath.Join(dir, "cache")
	env := []string{"TYPESAFE_API_KEY=" + secret, "TYPESAFE_API_KEY_FILE=", "HOIST_ORACLE_URL="}
	learnArgs := func(out string, oracle ...string) []string {
		return append([]string{"learn", "-q", "--sessions", logs, "--domain", "retail", "--folds", "2", "--min-support", "2", "-o", out}, oracle...)
	}

	jevFlow := filepath.Join(dir, "jev.flow.json")
	if r := run(t, env, learnArgs(jevFlow, "--oracle", "jev", "--oracle-url", srv.URL, "--oracle-model", "jev-test", "--oracle-cache", cache)...); r.code != 0 {
		t.Fatalf("hoist learn --oracle jev: exit %d\n%s", r.code, r.stderr)
	}
	asked := lookupQuestions(srv.Requests())
	if asked == 0 || asked != len(srv.Requests()) {
		t.Fatalf("learn put %d flow questions in %d requests, want some and only those", asked, len(srv.Requests()))
	}
	f, err := flow.Load(jevFlow)
	if err != nil {
		t.Fatal(err)
	}
	if f.Arbiter == nil || !slices.Contains(f.Arbiter.Features, flow.FeatureOracle) || f.Arbiter.OracleWeight(-1) == 0 {
		t.Fatalf("learned arbiter %+v: want an oracle weight", f.Arbiter)
	}

	// Replay: the same flow, byte for byte, with no request.
	replayFlow := filepath.Join(dir, "replay.flow.json")
	if r := run(t, env, learnArgs(replayFlow, "--oracle", "replay", "--oracle-model", "jev-test", "--oracle-cache", cache)...); r.code != 0 {
		t.Fatalf("hoist learn --oracle replay: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(srv.Requests()); n != asked {
		t.Errorf("replay sent %d requests", n-asked)
	}
	if a, b := readFile(t, jevFlow), readFile(t, replayFlow); !bytes.Equal(a, b) {
		t.Errorf("the flow learned under replay differs from jev's")
	}

	// Without --oracle: no oracle feature.
	plainFlow := filepath.Join(dir, "plain.flow.json")
	mustRun(t, learnArgs(plainFlow)...)
	if pf, err := flow.Load(plainFlow); err != nil || pf.Arbiter == nil || slices.Contains(pf.Arbiter.Features, flow.FeatureOracle) {
		t.Errorf("learn without --oracle: arbiter %+v, %v; want one without the oracle", pf.Arbiter, err)
	}

	// Mock: the same flow twice.
	mock1, mock2 := filepath.Join(dir, "mock1.flow.json"), filepath.Join(dir, "mock2.flow.json")
	mustRun(t, learnArgs(mock1, "--oracle", "mock")...)
	mustRun(t, learnArgs(mock2, "--oracle", "mock")...)
	if !bytes.Equal(readFile(t, mock1), readFile(t, mock2)) {
		t.Errorf("two learns under --oracle mock differ")
	}

	// Serving, with a cache of its own, so that the questions go on the
	// wire, and a budget of one question.
	before := len(srv.Requests())
	flowLog := filepath.Join(dir, "serve.flow.jsonl")
	jev := []string{"--oracle", "jev", "--oracle-url", srv.URL, "--oracle-model", "jev-test"}
	serveOnce(t, dir, "serve", env, append([]string{"--flow", jevFlow, "--flow-log", flowLog, "--flow-questions", "1", "--oracle-cache", filepath.Join(dir, "serve-cache")}, jev...)...)
	if n := lookupQuestions(srv.Requests()[before:]); n != 1 {
		t.Errorf("the proxy put %d flow questions on the wire, want 1 (--flow-questions 1)", n)
	}
	offers := flowOffers(t, flowLog)
	var answered, spent int
	for _, o := range offers {
		switch {
		case o.POracle != nil:
			answered++
			if *o.POracle != 0.8 || o.OracleKey == "" || o.OracleCached {
				t.Errorf("answered offer %+v: want p_oracle 0.8 from the wire, with its key", o)
			}
		case o.OracleWhy == "spent":
			spent++
		}
	}
	if answered == 0 || spent == 0 {
		t.Errorf("flow log offers: %d answered, %d with the budget spent; want both (%+v)", answered, spent, offers)
	}

	// The same session under replay over the serving cache, in the same
	// fold: the same questions, answers and decisions, from the cache,
	// with no request.
	before = len(srv.Requests())
	replayLog := filepath.Join(dir, "replay.flow.jsonl")
	serveOnce(t, dir, "replay", env, "--flow", jevFlow, "--flow-log", replayLog, "--flow-questions", "1", "--task-id", "serve",
		"--oracle", "replay", "--oracle-model", "jev-test", "--oracle-cache", filepath.Join(dir, "serve-cache"))
	if n := len(srv.Requests()) - before; n != 0 {
		t.Errorf("serving under replay sent %d requests", n)
	}
	replayed := flowOffers(t, replayLog)
	if len(replayed) != len(offers) {
		t.Fatalf("replay offered %d, the live session %d", len(replayed), len(offers))
	}
	for i, o := range replayed {
		live := offers[i]
		same := o.Label() == live.Label() && o.OracleKey == live.OracleKey && o.OracleWhy == live.OracleWhy && o.PArbiter == live.PArbiter &&
			(o.POracle == nil) == (live.POracle == nil) && (o.POracle == nil || *o.POracle == *live.POracle && o.OracleCached)
		if !same {
			t.Errorf("offer %d under replay %+v, live %+v", i, o, live)
		}
	}

	// Promote: a shadow session whose questions all missed (replay over an
	// empty cache), then the same session under jev, which caches their
	// answers; promote --oracle-cache re-decides the first from them.
	shadowCache := filepath.Join(dir, "shadow-cache")
	if err := os.Mkdir(shadowCache, 0o700); err != nil {
		t.Fatal(err)
	}
	shadow := []string{"--flow", jevFlow, "--flow-shadow", "--oracle-cache", shadowCache}
	serveOnce(t, dir, "missed", env, append(shadow, "--oracle", "replay", "--oracle-model", "jev-test")...)
	missLogs, _ := filepath.Glob(filepath.Join(dir, "rec-missed", "*.flow.jsonl")) // beside the session log, where ingest finds it
	if len(missLogs) != 1 {
		t.Fatalf("flow logs of the shadow session: %q", missLogs)
	}
	missLog := missLogs[0]
	misses := 0
	for _, o := range flowOffers(t, missLog) {
		if o.OracleWhy == "miss" && o.OracleKey != "" {
			misses++
		}
	}
	if misses == 0 {
		t.Fatalf("the shadow session under replay logged no miss")
	}
	serveOnce(t, dir, "answered", env, append(shadow, jev...)...)
	promoteArgs := []string{"promote", "--flow", jevFlow, "--sessions", filepath.Join(dir, "rec-missed"), "--min-runs", "1", "-o", filepath.Join(dir, "promoted.flow.json")}
	plain := mustRun(t, promoteArgs...)
	redecided := mustRun(t, append(promoteArgs, "--oracle-cache", shadowCache)...)
	if want := fmt.Sprintf("hoist: %d offers re-decided from the answers cached in %s", misses, shadowCache); !strings.Contains(redecided.stderr, want) {
		t.Errorf("promote --oracle-cache said:\n%s\nwant %q", redecided.stderr, want)
	}
	if strings.Contains(plain.stderr, "re-decided") {
		t.Errorf("promote without --oracle-cache said:\n%s", plain.stderr)
	}
	if r := run(t, nil, append(promoteArgs, "--oracle-cache", filepath.Join(dir, "nowhere"))...); r.code != 2 || !strings.Contains(r.stderr, "--oracle-cache") {
		t.Errorf("promote --oracle-cache of no directory: exit %d\n%s", r.code, r.stderr)
	}
	noSecret(t, dir, secret)
}

// serveOnce runs one session through hoist-mcp in front of the demo's
// retail world, recording to dir/rec-<name>, with flags: the customer
// names an order, the agent looks the customer up, then another order.
func serveOnce(t *testing.T, dir, name string, env []string, flags ...string) {
	t.Helper()
	ctx := filepath.Join(dir, name+".ctx.jsonl")
	args := append([]string{"--record", filepath.Join(dir, "rec-"+name), "--domain", "retail", "--server-name", "retail", "--context", ctx,
		"--flow-threshold", "0.01"}, flags...)
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), append(args, "--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")...)
	cmd.Env = testbin.Env(append(env, "HOIST_SESSION="+name)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p := attach(t, cmd)
	p.start(t)
	say(t, ctx, "Hi! It's c9@example.com, about order #W9b please")
	p.request(t, 2, "tools/call", `{"name":"find_user_id_by_email","arguments":{"email":"c9@example.com"}}`)
	p.request(t, 3, "tools/call", `{"name":"get_order_details","arguments":{"order_id":"#W9a"}}`)
	p.close(t)
	if t.Failed() {
		t.Logf("hoist-mcp %s: %s", name, stderr.String())
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
