package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// recordedCall is one of the agent's calls in a session log, with the
// answer it got.
type recordedCall struct {
	tool    string
	args    map[string]any
	text    string
	isError bool
}

// readRecordedCalls reads the agent's calls of a session log in the order
// it sent them, each with its recorded answer.
func readRecordedCalls(t testing.TB, path string) []recordedCall {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []recordedCall
	byID := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e struct {
			From    string `json:"from"`
			Message struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name      string         `json:"name"`
					Arguments map[string]any `json:"arguments"`
				} `json:"params"`
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					IsError bool `json:"isError"`
				} `json:"result"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		m := e.Message
		switch {
		case e.From == "client" && m.Method == "tools/call":
			byID[string(m.ID)] = len(calls)
			calls = append(calls, recordedCall{tool: m.Params.Name, args: m.Params.Arguments})
		case e.From == "server" && m.Method == "":
			if i, ok := byID[string(m.ID)]; ok && len(m.Result.Content) > 0 {
				calls[i].text, calls[i].isError = m.Result.Content[0].Text, m.Result.IsError
			}
		}
	}
	return calls
}

// TestTau2Fidelity replays every agent call of τ²-bench's recorded retail
// sessions, in the order each agent sent them, against a fresh session of
// the world, and wants each recorded answer back byte for byte: the reads,
// the writes, and the errors.
func TestTau2Fidelity(t *testing.T) {
	db := shippedDB(t)
	var logs []string
	for _, dir := range []string{
		filepath.Join("..", "..", "testdata", "tau2", "logs", "retail"),
		filepath.Join(sharedTau2(), "logs", "retail"),
	} {
		found, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
		for _, p := range found {
			if !strings.HasSuffix(p, ".context.jsonl") {
				logs = append(logs, p)
			}
		}
	}
	sort.Strings(logs)
	matched, total := 0, 0
	for _, path := range logs {
		w := NewTau2Retail(db)
		for i, c := range readRecordedCalls(t, path) {
			res, known := w.Call(context.Background(), c.tool, c.args)
			if !known {
				t.Errorf("%s: call %d: unknown tool %s", path, i, c.tool)
				continue
			}
			text, isError := resultText(res)
			total++
			if text == c.text && isError == c.isError {
				matched++
				continue
			}
			t.Errorf("%s: call %d %s %v:\n got %q (isError %v)\nwant %q (isError %v)", filepath.Base(path), i, c.tool, c.args, text, isError, c.text, c.isError)
		}
	}
	t.Logf("%d of %d recorded answers reproduced, in %d sessions", matched, total, len(logs))
}

func resultText(res any) (string, bool) {
	m := res.(map[string]any)
	return m["content"].([]any)[0].(map[string]any)["text"].(string), m["isError"].(bool)
}

func shippedDB(t testing.TB) *Tau2DB {
	t.Helper()
	db, err := LoadTau2DB(filepath.Join("..", "..", "testdata", "tau2", "db", "retail.json"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// sharedTau2 returns the shared τ²-bench data beside the checkout (the
// full train half; see testdata/tau2/README.md), or "" when there is none.
func sharedTau2() string {
	for _, up := range []string{"../../..", "../../../.."} {
		dir := filepath.Join(up, "shared", "data", "tau2")
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
	}
	return ""
}
