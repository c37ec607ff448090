package procedure

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/mcplog"
)

func TestParse(t *testing.T) {
	src := `# a comment, then a blank line

// another comment
{"procedure": "p", "description": "d", "params": {"email": null, "reason": "no longer needed"}, "think_ms": 250}
{"step": "one", "tool": "find_user_id_by_email", "args": {"email": "$param.email"}}
{"calls": [{"tool": "get_user_details", "args": {"user_id": "$last[find_user_id_by_email]"}}, {"tool": "get_user_details", "args": {"user_id": "$$literal", "n": 3, "flag": true}}], "think_ms": 0}
{"tool": "cancel_pending_order", "args": {"order_id": "$call[1].orders[0]", "reason": "$param.reason"}}
`
	p, err := Parse(strings.NewReader(src), "p.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	def := "no longer needed"
	if p.Name != "p" || p.Description != "d" || p.Think != 250*time.Millisecond || !cmp.Equal(p.Params, map[string]*string{"email": nil, "reason": &def}) {
		t.Errorf("header: %+v", p)
	}
	if len(p.Steps) != 3 {
		t.Fatalf("%d steps, want 3", len(p.Steps))
	}
	got := []string{}
	for _, st := range p.Steps {
		for _, c := range st.Calls {
			for _, k := range sortedKeys(c.Args) {
				a := c.Args[k]
				v := a.Binding.String()
				if a.Param != "" {
					v = "param " + a.Param
				}
				got = append(got, c.Tool+" "+k+"="+v)
			}
		}
	}
	want := []string{
		"find_user_id_by_email email=param email",
		"get_user_details user_id=$last[find_user_id_by_email]",
		"get_user_details flag=true",
		"get_user_details n=3",
		`get_user_details user_id="$literal"`,
		"cancel_pending_order order_id=$call[1].orders[0]",
		"cancel_pending_order reason=param reason",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	if p.Steps[0].Line != 5 || p.Steps[0].Label != "one" || p.Steps[0].Think != -1 || p.Steps[1].Think != 0 {
		t.Errorf("steps: %+v", p.Steps)
	}

	params, err := p.ResolveParams(map[string]string{"email": "c1@example.com"})
	if err != nil || !cmp.Equal(params, map[string]string{"email": "c1@example.com", "reason": def}) {
		t.Errorf("ResolveParams: %v %v", params, err)
	}
	if _, err := p.ResolveParams(nil); err == nil || !strings.Contains(err.Error(), "needs --param email=VALUE") {
		t.Errorf("ResolveParams without email: %v", err)
	}
	if _, err := p.ResolveParams(map[string]string{"email": "x", "mail": "y"}); err == nil || !strings.Contains(err.Error(), "--param mail") {
		t.Errorf("ResolveParams with an unknown name: %v", err)
	}
}

func sortedKeys(m map[string]Arg) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

// TestParseErrors checks that each bad file gives one error naming the
// file, the line and the field.
func TestParseErrors(t *testing.T) {
	const header = `{"procedure": "p", "params": {"email": null}}` + "\n"
	const find = `{"tool": "find_user_id_by_email", "args": {"email": "$param.email"}}` + "\n"
	for _, tc := range []struct {
		name, src, want string
	}{
		{"empty", "# nothing\n", `p.jsonl: empty procedure`},
		{"no steps", header, `p.jsonl:1: the procedure has no steps`},
		{"not JSON", header + "find the user\n", `p.jsonl:2: want a JSON object on one line`},
		{"broken JSON", header + `{"tool": "x", "args": {` + "\n", `p.jsonl:2: not JSON: the object does not end on this line`},
		{"no name", `{"params": {}}` + "\n" + find, `p.jsonl:1: procedure: the first line is the header`},
		{"header member", `{"procedure": "p", "parms": {}}` + "\n" + find, `p.jsonl:1: parms: header: unknown member`},
		{"param default", `{"procedure": "p", "params": {"email": 3}}` + "\n" + find, `p.jsonl:1: params.email: want a string`},
		{"param name", `{"procedure": "p", "params": {"e-mail": null}}` + "\n" + find, `p.jsonl:1: params.e-mail: a parameter's name`},
		{"think", `{"procedure": "p", "think_ms": -5}` + "\n" + find, `p.jsonl:1: think_ms: want milliseconds`},
		{"step member", header + `{"tool": "x", "arg": {}}` + "\n", `p.jsonl:2: arg: unknown member`},
		{"no calls", header + `{"step": "nothing"}` + "\n", `p.jsonl:2: calls: a step is one LLM turn`},
		{"both", header + `{"tool": "x", "calls": [{"tool": "y"}]}` + "\n", `p.jsonl:2: tool: give either`},
		{"no tool", header + find + `{"calls": [{"tool": "y"}, {"args": {}}]}` + "\n", `p.jsonl:3: calls[1].tool: missing the tool's name`},
		{"tool type", header + `{"tool": 7}` + "\n", `p.jsonl:2: tool: want a string, got a JSON number`},
		{"bad binding", header + find + `{"tool": "get_user_details", "args": {"user_id": "$lats[find_user_id_by_email]"}}` + "\n",
			`p.jsonl:3: args.user_id: binding "$lats[find_user_id_by_email]" at offset 1: unknown root $lats`},
		{"bad binding in calls", header + find + `{"calls": [{"tool": "get_user_details", "args": {"user_id": "$result.orders[*][*]"}}]}` + "\n",
			`p.jsonl:3: calls[0].args.user_id: binding "$result.orders[*][*]"`},
		{"undeclared param", header + `{"tool": "x", "args": {"a": "$param.zip"}}` + "\n", `p.jsonl:2: args.a: $param.zip is not declared`},
		{"last of a later tool", header + `{"tool": "get_user_details", "args": {"user_id": "$last[find_user_id_by_email]"}}` + "\n" + find,
			`p.jsonl:2: args.user_id: no earlier step calls find_user_id_by_email`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.src), "p.jsonl")
			var ie *mcplog.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an InputError", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %s\nwant %s…", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error has more than one line: %q", err)
			}
		})
	}
}

func TestParseFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.jsonl")
	_, err := ParseFile(path)
	if err == nil || err.Error() != path+": no such file or directory" {
		t.Errorf("got %v", err)
	}
}

// TestShippedProcedures parses every procedure under testdata/procedures.
func TestShippedProcedures(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "procedures", "*", "*.jsonl"))
	if len(paths) == 0 {
		t.Fatal("no procedures in testdata/procedures")
	}
	for _, path := range paths {
		if _, err := ParseFile(path); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "docs", "procedure.md")); err != nil {
		t.Errorf("the format's page: %v", err)
	}
}
