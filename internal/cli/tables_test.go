package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/store"
)

// TestPipedTablesHaveAHeader: a table piped to another program is
// tab-separated, and its first line names the columns, as on a terminal.
func TestPipedTablesHaveAHeader(t *testing.T) {
	var b bytes.Buffer
	printSessionsTable(&b, []store.Session{{ID: "s1", Domain: "retail"}}, false)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID\tDOMAIN\t") || strings.Count(lines[0], "\t") != strings.Count(lines[1], "\t") {
		t.Errorf("hoist sessions piped:\n%s", b.String())
	}
	b.Reset()
	printEvaluateTable(&b, &evaluate.Report{Level: 0.95}, false)
	if !strings.HasPrefix(b.String(), "RULE\tESTIMATOR\tVALUE\t") {
		t.Errorf("hoist evaluate piped:\n%s", b.String())
	}
}
