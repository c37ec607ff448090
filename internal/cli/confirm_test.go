package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/oracletest"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// confirmJSON is what the tests read of hoist confirm --json.
type confirmJSON struct {
	Second      string `json:"second"`
	Writes      split  `json:"writes"`
	Answered    split  `json:"answered"`
	WouldRefuse split  `json:"would_refuse"`
	Judgments   []struct {
		Call  int `json:"call"`
		First struct {
			Key    string `json:"key"`
			Cached bool   `json:"cached"`
			From   string `json:"from"`
		} `json:"first"`
		Second      *json.RawMessage `json:"second"`
		WouldRefuse bool             `json:"would_refuse"`
	} `json:"writes_judged"`
}

type split struct {
	All     int `json:"all"`
	Reward1 int `json:"reward_1"`
	Below1  int `json:"reward_below_1"`
	Unknown int `json:"unknown"`
}

// hoist confirm over τ²-bench results asks the model once per write, on
// the wire, and a rerun under replay answers the same from the cache
// without the model; the key never leaves the Authorization header.
func TestConfirmAsksThenReplays(t *testing.T) {
	const secret = "sk-confirm-test-4242"
	results := filepath.Join(testbin.Root(), "testdata", "tau2", "results")
	files, err := filepath.Glob(filepath.Join(results, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no results files in %s: %v", results, err)
	}
	srv := oracletest.Start(t)
	srv.Default(oracletest.WithLogprobs(0.15))
	cache := filepath.Join(t.TempDir(), "cache")
	args := append([]string{"confirm", "--json", "--oracle-cache", cache, "--oracle-model", "jev-test", "--tau2"}, files...)

	r := run(t, []string{"TYPESAFE_API_KEY=" + secret}, append(args, "--oracle-url", srv.URL)...)
	if r.code != 0 {
		t.Fatalf("hoist confirm: exit %d\n%s", r.code, r.stderr)
	}
	var first confirmJSON
	if err := json.Unmarshal([]byte(r.stdout), &first); err != nil {
		t.Fatalf("reading the report: %v\n%s", err, r.stdout)
	}
	if first.Writes.All == 0 || first.Writes.All != len(first.Judgments) {
		t.Fatalf("writes %d, judgments %d", first.Writes.All, len(first.Judgments))
	}
	// Every write got p_yes 0.15, below the threshold: all refused.
	if first.WouldRefuse.All != first.Writes.All || first.Answered.All != first.Writes.All {
		t.Errorf("would refuse %d, answered %d, of %d writes", first.WouldRefuse.All, first.Answered.All, first.Writes.All)
	}
	reqs := srv.Requests()
	if len(reqs) != first.Writes.All {
		t.Errorf("%d requests for %d writes", len(reqs), first.Writes.All)
	}
	for _, q := range reqs {
		if q.Header.Get("Authorization") != "Bearer "+secret {
			t.Errorf("Authorization = %q", q.Header.Get("Authorization"))
		}
		if strings.Contains(string(q.Body), secret) {
			t.Error("the key is in a request's body")
		}
	}
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Error("the key is in hoist confirm's output")
	}
	filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
				t.Errorf("the key is in the cache entry %s", path)
			}
		}
		return nil
	})

	// Replay: the same answers, all from the cache, no request.
	r = run(t, nil, append(args, "--oracle", "replay")...)
	if r.code != 0 {
		t.Fatalf("hoist confirm --oracle replay: exit %d\n%s", r.code, r.stderr)
	}
	var again confirmJSON
	if err := json.Unmarshal([]byte(r.stdout), &again); err != nil {
		t.Fatal(err)
	}
	if again.WouldRefuse != first.WouldRefuse || len(again.Judgments) != len(first.Judgments) {
		t.Errorf("replay: would refuse %+v, want %+v", again.WouldRefuse, first.WouldRefuse)
	}
	for i, j := range again.Judgments {
		if !j.First.Cached || j.First.Key != first.Judgments[i].First.Key {
			t.Errorf("write %d: cached %v, key %s, want the first run's %s", i, j.First.Cached, j.First.Key, first.Judgments[i].First.Key)
		}
	}
	if n := len(srv.Requests()); n != len(reqs) {
		t.Errorf("replay sent %d more requests", n-len(reqs))
	}
}

// A judge that cannot answer refuses nothing: replay over an empty cache,
// and jev without a key, which says so once.
func TestConfirmWithoutAnswers(t *testing.T) {
	results := filepath.Join(testbin.Root(), "testdata", "tau2", "results", "retail-gpt-4.1.json")
	for _, mode := range []string{"replay", "jev"} {
		r := run(t, []string{"TYPESAFE_API_KEY=", "TYPESAFE_API_KEY_FILE=", "HOIST_ORACLE_URL="},
			"confirm", "--tau2", results, "--oracle", mode, "--oracle-cache", t.TempDir(), "--oracle-model", "m")
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", mode, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "\nall ") || !strings.Contains(r.stdout, "Unanswered (refusing nothing): ") || strings.Contains(r.stdout, "WOULD REFUSE") {
			t.Errorf("%s: report\n%s", mode, r.stdout)
		}
		if mode == "jev" && strings.Count(r.stderr, "the model cannot be asked (no key: set TYPESAFE_API_KEY") != 1 {
			t.Errorf("jev without a key: stderr\n%s", r.stderr)
		}
	}
}

// The mock's rule, and the second question: a write whose values the
// agent never said fails on "proposed".
func TestConfirmMockAndFlags(t *testing.T) {
	results := filepath.Join(testbin.Root(), "testdata", "tau2", "results", "retail-gpt-4.1.json")
	r := mustRun(t, "confirm", "--tau2", results, "--oracle", "mock", "--json", "--confirm-second", "proposed")
	var rep confirmJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Second != "proposed" || len(rep.Judgments) == 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, j := range rep.Judgments {
		if j.First.From != "mock" || (j.Second == nil && !j.WouldRefuse) {
			t.Errorf("write %d: %+v", j.Call, j)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"confirm", "--oracle", "mock"}, "say what to check"},
		{[]string{"confirm", "--tau2", results, "--oracle", "gpt"}, `--oracle: unknown oracle "gpt"`},
		{[]string{"confirm", "--tau2", results, "--confirm-threshold", "2"}, "--confirm-threshold 2: want a probability"},
		{[]string{"confirm", "--tau2", results, "--confirm-second", "both"}, `--confirm-second: unknown second question "both"`},
		{[]string{"confirm", "--tau2", results, "--confirm-second-shadow"}, "--confirm-second-shadow: needs --confirm-second"},
	} {
		r := run(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("hoist %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}

// The proxy's judge and hoist confirm share the cache: a session judged by
// hoist-mcp --confirm-judge, recorded with its conversation, asks hoist
// confirm --oracle replay the same questions, whose answers are there.
func TestConfirmSharesTheProxysCache(t *testing.T) {
	const secret = "sk-shared-cache-99"
	srv := oracletest.Start(t)
	srv.Default(oracletest.WithLogprobs(0.3))
	dir, tmp := t.TempDir(), t.TempDir()
	chatFile, cache := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache")
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), "--record", dir, "--domain", "retail", "--guards", "--context", chatFile,
		"--confirm-judge", "log", "--oracle-url", srv.URL, "--oracle-model", "jev-test", "--oracle-cache", cache,
		"--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	cmd.Env = testbin.Env("TYPESAFE_API_KEY=" + secret)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	say := func(role, text string) {
		f, err := os.OpenFile(chatFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]string{"role": role, "content": text})
		f.Write(append(b, '\n'))
		f.Close()
	}
	call := func(id int, tool, args string) {
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`+"\n", id, tool, args)
		if _, err := out.ReadString('\n'); err != nil {
			t.Fatalf("reading the answer to %d: %v (stderr: %s)", id, err, stderr.String())
		}
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n")
	out.ReadString('\n')
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	say("user", "Hi, I'm c7@example.com; please cancel #W7a, I no longer need it.")
	call(2, "find_user_id_by_email", `{"email":"c7@example.com"}`)
	call(3, "get_order_details", `{"order_id":"#W7a"}`)
	say("assistant", "I will cancel #W7a for 'no longer needed'. Shall I go ahead?")
	say("user", "Yes, go ahead.")
	call(4, "cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`)
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("hoist-mcp: %v\n%s", err, stderr.String())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the proxy asked %d questions, want 1", n)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.confirm.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("confirm logs: %v", logs)
	}
	b, _ := os.ReadFile(logs[0])
	var judged struct {
		Answers []struct {
			Key string `json:"key"`
		} `json:"answers"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &judged); err != nil || len(judged.Answers) != 1 {
		t.Fatalf("confirm log %s: %v", b, err)
	}

	r := run(t, nil, "confirm", "--sessions", dir, "--store", filepath.Join(tmp, "s.db"), "--json",
		"--oracle", "replay", "--oracle-model", "jev-test", "--oracle-cache", cache)
	if r.code != 0 {
		t.Fatalf("hoist confirm: exit %d\n%s", r.code, r.stderr)
	}
	var rep confirmJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Judgments) != 1 || !rep.Judgments[0].First.Cached || rep.Judgments[0].First.Key != judged.Answers[0].Key {
		t.Errorf("hoist confirm's judgments %+v; want the proxy's question %s, from the cache", rep.Judgments, judged.Answers[0].Key)
	}
	if len(srv.Requests()) != 1 {
		t.Error("hoist confirm --oracle replay asked the model")
	}
	for _, d := range []string{dir, tmp} {
		filepath.WalkDir(d, func(path string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(secret)) {
					t.Errorf("the key is in %s", path)
				}
			}
			return nil
		})
	}
}
