package flow

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/episode"
)

const userDoc = `{"user_id":"user_7","name":{"first":"Ann"},"orders":["#W7a","#W7b"],
"items":[{"item_id":"111","qty":2},{"item_id":"222","qty":1},{"note":"x"}],"odd key":true,"big":12345678901234567890}`

func TestParseBindingRoundTrip(t *testing.T) {
	for _, expr := range []string{
		"$text", "$result", "$result.user_id", "$result.name.first", "$result.orders[0]",
		"$result.orders[-1]", "$result.orders[*]", "$result.items[*].item_id",
		`$result["odd key"]`, "$call[2].orders[*]", "$last[get_user_details].user_id",
		"$last[docs::search][0]", `$last["a]b"]`, `"standard"`, "42", "true", "null",
		`{"a":[1,2]}`, `"$not a ref"`,
	} {
		b, err := ParseBinding(expr)
		if err != nil {
			t.Errorf("ParseBinding(%q): %v", expr, err)
			continue
		}
		if got := b.String(); got != expr {
			t.Errorf("ParseBinding(%q).String() = %q", expr, got)
		}
	}
	// Non-canonical spellings come back canonical.
	for in, want := range map[string]string{
		` $result.user_id `:       "$result.user_id",
		`$result["user_id"]`:      "$result.user_id",
		`{ "a" : 1 }`:             `{"a":1}`,
		`$last["get_user"].x`:     "$last[get_user].x",
		`$result.items[*]["qty"]`: "$result.items[*].qty",
	} {
		if got := MustParseBinding(in).String(); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

func TestParseBindingErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":                  "empty expression",
		"$":                 "want $text",
		"$foo":              "unknown root $foo",
		"$text.x":           "takes no path",
		"$call":             "$call wants an index",
		"$call[x]":          "call index",
		"$call[1":           "want ]",
		"$last[]":           "empty tool name",
		"$last[abc":         "want ] after the tool name",
		"$result.":          "want a member name",
		"$result[*][*]":     "only one [*]",
		"$result[x]":        "want an index",
		"$result orders":    "unexpected",
		"user_id":           "want a reference starting with $",
		`"a" "b"`:           "JSON constant",
		`$result["unclosed`: "bad quoted name",
	} {
		_, err := ParseBinding(expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseBinding(%q) = %v, want a SyntaxError", expr, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBinding(%q) = %q, want it to say %q", expr, err, want)
		}
	}
}

func TestEval(t *testing.T) {
	s := &Scope{}
	s.Add(0, NewResult("find_user_id_by_email", "user_7"))
	s.Add(1, NewResult("get_user_details", userDoc))
	s.Add(2, NewResult("get_order_details", `{"order_id":"#W7a","user_id":"user_7"}`))
	for expr, want := range map[string]string{
		"$text":                                    `["{\"order_id\":\"#W7a\",\"user_id\":\"user_7\"}"]`,
		"$result.order_id":                         `["#W7a"]`,
		"$call[0]":                                 `["user_7"]`,
		"$last[find_user_id_by_email]":             `["user_7"]`,
		"$call[1].orders[*]":                       `["#W7a","#W7b"]`,
		"$call[1].orders[1]":                       `["#W7b"]`,
		"$call[1].orders[-2]":                      `["#W7a"]`,
		"$last[get_user_details].name.first":       `["Ann"]`,
		"$last[get_user_details].items[*].item_id": `["111","222"]`,
		`$last[get_user_details]["odd key"]`:       `[true]`,
		"$last[get_user_details].big":              `[12345678901234567890]`,
		`"standard"`:                               `["standard"]`,
		`{"b":1,"a":2}`:                            `[{"a":2,"b":1}]`,
	} {
		vs, err := MustParseBinding(expr).Eval(s)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := Canonical(vs); got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
	for _, expr := range []string{
		"$result.nope", "$call[5]", "$call[1].orders[2]", "$call[1].user_id.x",
		"$last[get_product_details]", "$call[1].user_id[*]", "$call[0].x",
	} {
		if _, err := MustParseBinding(expr).Eval(s); !errors.Is(err, ErrNoValue) {
			t.Errorf("%s: err = %v, want ErrNoValue", expr, err)
		}
	}
	if _, err := MustParseBinding("$text").Eval(&Scope{}); !errors.Is(err, ErrNoValue) {
		t.Errorf("$text without a site: %v", err)
	}
}

func TestEvalDoc(t *testing.T) {
	vs, err := MustParseBinding("$result.orders[*]").EvalDoc(json.RawMessage(userDoc))
	if err != nil || Canonical(vs) != `["#W7a","#W7b"]` {
		t.Fatalf("EvalDoc = %v, %v", vs, err)
	}
}

func TestBindingJSON(t *testing.T) {
	type args struct {
		A map[string]Binding `json:"args"`
	}
	var a args
	if err := json.Unmarshal([]byte(`{"args":{"order_id":"$result.orders[*]","k":"\"x\""}}`), &a); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(a)
	if want := `{"args":{"k":"\"x\"","order_id":"$result.orders[*]"}}`; string(out) != want {
		t.Errorf("marshal = %s, want %s", out, want)
	}
	if err := json.Unmarshal([]byte(`{"args":{"x":"$nope"}}`), &a); err == nil || !strings.Contains(err.Error(), "unknown root") {
		t.Errorf("bad binding in JSON: %v", err)
	}
}

func TestBindArgs(t *testing.T) {
	s := &Scope{}
	s.Add(0, NewResult("get_user_details", userDoc))
	got, err := BindArgs(map[string]Binding{
		"order_id": MustParseBinding("$result.orders[*]"),
		"verbose":  MustParseBinding("true"),
	}, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"order_id":"#W7a","verbose":true}`, `{"order_id":"#W7b","verbose":true}`}
	var gs []string
	for _, g := range got {
		gs = append(gs, string(g))
	}
	if d := cmp.Diff(want, gs); d != "" {
		t.Errorf("BindArgs (-want +got):\n%s", d)
	}
	got, _ = BindArgs(map[string]Binding{"order_id": MustParseBinding("$result.orders[*]")}, s, 1)
	if len(got) != 1 {
		t.Errorf("max 1 gave %d", len(got))
	}
	if _, err := BindArgs(map[string]Binding{"x": MustParseBinding("$result.nope")}, s, 0); !errors.Is(err, ErrNoValue) {
		t.Errorf("missing: %v", err)
	}
	empty := &Scope{}
	empty.Add(0, NewResult("t", `{"l":[]}`))
	if got, err := BindArgs(map[string]Binding{"x": MustParseBinding("$result.l[*]")}, empty, 0); err != nil || len(got) != 0 {
		t.Errorf("empty fan-out: %v %v", got, err)
	}
}

func TestScopeAt(t *testing.T) {
	c0 := &episode.Call{Index: 0, Tool: "find_user_id_by_email"}
	c1 := &episode.Call{Index: 1, Tool: "get_user_details"}
	r0 := &episode.Result{CallIndex: 0, Text: "user_7"}
	r1 := &episode.Result{CallIndex: 1, Text: userDoc}
	ep := &episode.Episode{Events: []episode.Event{
		{Type: episode.EventCall, Call: c0}, {Type: episode.EventResult, Result: r0},
		{Type: episode.EventCall, Call: c1}, {Type: episode.EventResult, Result: r1},
	}}
	s := ScopeAt(ep, 0)
	if vs, err := MustParseBinding("$text").Eval(s); err != nil || vs[0] != "user_7" {
		t.Errorf("site 0: %v %v", vs, err)
	}
	if _, err := MustParseBinding("$call[1]").Eval(s); !errors.Is(err, ErrNoValue) {
		t.Errorf("a later result is not in scope: %v", err)
	}
	s = ScopeAt(ep, 1)
	if vs, err := MustParseBinding("$last[find_user_id_by_email]").Eval(s); err != nil || vs[0] != "user_7" {
		t.Errorf("site 1: %v %v", vs, err)
	}
}

func FuzzParseBinding(f *testing.F) {
	for _, s := range []string{"$text", "$result.a[*].b", `$last["x"][0]`, `"c"`, "$call[3]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		b, err := ParseBinding(expr)
		if err != nil {
			return
		}
		b2, err := ParseBinding(b.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", b.String(), expr, err)
		}
		if b2.String() != b.String() {
			t.Fatalf("canonical form not stable: %q → %q", b.String(), b2.String())
		}
	})
}
