package binding

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/jsontext"
)

const userDoc = `{"user_id":"user_7","name":{"first":"Ann"},"orders":["#W7a","#W7b"],
"items":[{"item_id":"111","qty":2},{"item_id":"222","qty":1},{"note":"x"}],"odd key":true,"big":12345678901234567890}`

func TestParseRoundTrip(t *testing.T) {
	for _, expr := range []string{
		"$text", "$result", "$result.user_id", "$result.name.first", "$result.orders[0]",
		"$result.orders[-1]", "$result.orders[*]", "$result.items[*].item_id",
		`$result["odd key"]`, "$call[2].orders[*]", "$last[get_user_details].user_id",
		"$last[docs::search][0]", `$last["a]b"]`, `"standard"`, "42", "true", "null",
		`{"a":[1,2]}`, `"$not a ref"`,
	} {
		b, err := Parse(expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
			continue
		}
		if got := b.String(); got != expr {
			t.Errorf("Parse(%q).String() = %q", expr, got)
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
		if got := MustParse(in).String(); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
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
		_, err := Parse(expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", expr, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %q, want it to say %q", expr, err, want)
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
		vs, err := MustParse(expr).Eval(s)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := jsontext.Canonical(vs); got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
	for _, expr := range []string{
		"$result.nope", "$call[5]", "$call[1].orders[2]", "$call[1].user_id.x",
		"$last[get_product_details]", "$call[1].user_id[*]", "$call[0].x",
	} {
		if _, err := MustParse(expr).Eval(s); !errors.Is(err, ErrNoValue) {
			t.Errorf("%s: err = %v, want ErrNoValue", expr, err)
		}
	}
	if _, err := MustParse("$text").Eval(&Scope{}); !errors.Is(err, ErrNoValue) {
		t.Errorf("$text without a site: %v", err)
	}
}

func TestEvalDoc(t *testing.T) {
	vs, err := MustParse("$result.orders[*]").EvalDoc(json.RawMessage(userDoc))
	if err != nil || jsontext.Canonical(vs) != `["#W7a","#W7b"]` {
		t.Fatalf("EvalDoc = %v, %v", vs, err)
	}
}

func TestExprJSON(t *testing.T) {
	type args struct {
		A map[string]Expr `json:"args"`
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

func TestArgs(t *testing.T) {
	s := &Scope{}
	s.Add(0, NewResult("get_user_details", userDoc))
	got, err := Args(map[string]Expr{
		"order_id": MustParse("$result.orders[*]"),
		"verbose":  MustParse("true"),
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
		t.Errorf("Args (-want +got):\n%s", d)
	}
	got, _ = Args(map[string]Expr{"order_id": MustParse("$result.orders[*]")}, s, 1)
	if len(got) != 1 {
		t.Errorf("max 1 gave %d", len(got))
	}
	if _, err := Args(map[string]Expr{"x": MustParse("$result.nope")}, s, 0); !errors.Is(err, ErrNoValue) {
		t.Errorf("missing: %v", err)
	}
	empty := &Scope{}
	empty.Add(0, NewResult("t", `{"l":[]}`))
	if got, err := Args(map[string]Expr{"x": MustParse("$result.l[*]")}, empty, 0); err != nil || len(got) != 0 {
		t.Errorf("empty fan-out: %v %v", got, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"$text", "$result.a[*].b", `$last["x"][0]`, `"c"`, "$call[3]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		b, err := Parse(expr)
		if err != nil {
			return
		}
		b2, err := Parse(b.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", b.String(), expr, err)
		}
		if b2.String() != b.String() {
			t.Fatalf("canonical form not stable: %q → %q", b.String(), b2.String())
		}
	})
}

// TestRepeatedMember: a path over text and over the parsed document agree
// on a repeated member name: the last one counts (jsontext's rule).
func TestRepeatedMember(t *testing.T) {
	text := `{"id":"first","order":{"id":"a","id":"b"},"id":"second"}`
	for _, expr := range []string{"$result.id", "$result.order.id"} {
		r := NewResult("t", text)
		s := &Scope{Site: r}
		fromText, err := MustParse(expr).Eval(s)
		if err != nil {
			t.Fatal(err)
		}
		r.Doc()
		fromDoc, err := MustParse(expr).Eval(s)
		if err != nil {
			t.Fatal(err)
		}
		if jsontext.Canonical(fromText) != jsontext.Canonical(fromDoc) {
			t.Errorf("%s over the text = %v, over the document = %v", expr, fromText, fromDoc)
		}
	}
	vs, _ := MustParse("$result.id").Eval(&Scope{Site: NewResult("t", text)})
	if vs[0] != "second" {
		t.Errorf("$result.id = %v, want the last, second", vs[0])
	}
}

// TestIndexedResult: bindings read a result through an index built on the
// way (the outermost object when the text is validated, a nested object on
// its second visit); every read agrees with the parsed document, repeated
// and escaped names included.
func TestIndexedResult(t *testing.T) {
	text := `{"a\u0062":1,"ab":2,"o":{"x":"first","y":[1,2],"x":"last"},"o2":{"k":"v"},"l":[{"k":1},{"k":2}]}`
	exprs := []string{"$result.ab", "$result.o.x", "$result.o.y[1]", "$result.o.x", "$result.o2.k", "$result.l[*].k", "$result.o.y", "$result.o2.k", "$result.nope"}
	r := NewResult("t", text)
	doc := NewResult("t", text)
	doc.Doc()
	for _, e := range exprs {
		got, gerr := MustParse(e).Eval(&Scope{Site: r})
		want, werr := MustParse(e).Eval(&Scope{Site: doc})
		if (gerr == nil) != (werr == nil) || jsontext.Canonical(got) != jsontext.Canonical(want) {
			t.Errorf("%s over the text = %v, %v; over the document = %v, %v", e, got, gerr, want, werr)
		}
	}
}
