package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/evaluate"
)

// The same warning of many rules is written once, with how many rules have
// it; --verbose lists each (issue 25, item 12).
func TestEvaluateWarningsGrouped(t *testing.T) {
	var results []evaluate.Result
	for i := range 11 {
		results = append(results, evaluate.Result{Rule: fmt.Sprintf("reach≥0.%d", i),
			Warnings: []string{fmt.Sprintf("effective sample size %d.0 is below 30", i+1), "one session carries 100% of the weight"}})
	}
	results = append(results, evaluate.Result{Rule: "never", Warnings: []string{"no support: no logged session took what this rule takes"}})
	var b strings.Builder
	writeRuleWarnings(&b, results, false)
	want := `warning: 11 rules (reach≥0.0 … reach≥0.10): effective sample size 1.0 is below 30 (reach≥0.0's; --verbose lists each rule's)
warning: 11 rules (reach≥0.0 … reach≥0.10): one session carries 100% of the weight (reach≥0.0's; --verbose lists each rule's)
warning: never: no support: no logged session took what this rule takes
`
	if b.String() != want {
		t.Errorf("grouped:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	writeRuleWarnings(&b, results, true)
	if n := strings.Count(b.String(), "\n"); n != 23 {
		t.Errorf("--verbose: %d lines, want 23:\n%s", n, b.String())
	}
}
