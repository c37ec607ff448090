package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flow-show's text names the cue words a lookup is offered after, in a
// flow learned with cues: get_order after get_user, made 4 times in 8,
// all 4 in the 5 where "exchange" was said (in 5 tasks) lifts 1.5 times.
func TestFlowShowCues(t *testing.T) {
	line := cueLine(t, "cues", map[string]any{"word": "exchange", "said": map[string]any{"n": 5}, "reach": map[string]any{"n": 4}, "tasks": map[string]any{"n": 5}})
	if !strings.Contains(line, "get_order") || !strings.HasSuffix(line, "only where said: exchange") {
		t.Errorf("cue line %q, want get_order's, ending \"only where said: exchange\"", line)
	}
}

// In a flow learned with the agent's words, a cue the agent said is named
// as the agent's.
func TestFlowShowAgentCues(t *testing.T) {
	line := cueLine(t, "agent_words", map[string]any{"word": "account", "by": "agent", "said": map[string]any{"n": 5}, "reach": map[string]any{"n": 4}, "tasks": map[string]any{"n": 5}})
	if !strings.Contains(line, "get_order") || !strings.HasSuffix(line, "only where said: agent: account") {
		t.Errorf("cue line %q, want get_order's, ending \"only where said: agent: account\"", line)
	}
}

// cueLine writes the golden shop flow with cue on get_order after
// get_user, learned with the option learned names, and returns the line
// of flow-show's text that names cues.
func cueLine(t *testing.T, learned string, cue map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "flowshow", "shop.flow.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	f["learned"].(map[string]any)[learned] = true
	cued := false
	for _, s := range f["sites"].([]any) {
		s := s.(map[string]any)
		if s["tool"] != "get_user" {
			continue
		}
		for _, l := range s["lookups"].([]any) {
			if l := l.(map[string]any); l["tool"] == "get_order" {
				l["cues"] = []any{cue}
				cued = true
			}
		}
	}
	if !cued {
		t.Fatal("no get_order after get_user in the golden flow")
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cues.flow.json")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	text, errOut, code := runInProcess(t, "flow-show", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var line string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "only where said") {
			if line != "" {
				t.Errorf("cues shown on two lines: %q and %q", line, l)
			}
			line = l
		}
	}
	if line == "" {
		t.Errorf("no line names cues:\n%s", text)
	}
	return line
}
