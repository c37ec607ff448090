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
		// The forms of the conversation, the site's arguments, lines,
		// templates and arrays.
		"$args", "$args.path", "$said[email]", "$said[email][-1]", `$said["#A9999999"][*]`,
		"$lines", `$lines["[FILE] *"][*]`, `$result.orders[said]`, `$result.items[said.name].product_id`,
		`$result[said]`, `$args.path + "/" + $lines["[FILE] *"][*]`, `"#W" + $result.id`,
		`[$result.entities[*].name]`, `[$result.entities[said.name].name]`,
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
	checkEval(t, s, map[string]string{
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
	})
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
	for _, s := range []string{"$text", "$result.a[*].b", `$last["x"][0]`, `"c"`, "$call[3]",
		`$args.path + "/" + $lines["[FILE] *"][*]`, `$said["#A9+"][-1]`, `[$result.e[said.name].name]`, `$result.o[said]`} {
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

func TestParseNewForms(t *testing.T) {
	for expr, want := range map[string]string{
		"$said":                       "$said wants a kind",
		"$said[phone]":                "unknown kind",
		`$said[""]`:                   "empty shape",
		`$lines["no star"]`:           "one *",
		`$result.a[*].b[said]`:        "only one fan-out",
		`$result.a[said][*]`:          "only one [*]",
		`$result.a[*] + $result.b[*]`: "over one list at most",
		`$result.a + {"x":1}`:         "a string or a number",
		`[$result.a]`:                 "collects a fan-out",
		`[$result.a[*]`:               "want ]",
		`$result.a + `:                "unexpected",
		`$result.a + [$result.b[*]]`:  "a reference or a constant",
	} {
		_, err := Parse(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want it to say %q", expr, err, want)
		}
	}
}

// TestZip: arguments that fan out over the same list take one element's
// values each; over different lists, every combination.
func TestZip(t *testing.T) {
	s := &Scope{}
	s.Add(0, NewResult("get_reservation_details", `{"flights":[{"flight_number":"HAT1","date":"2024-05-01"},{"flight_number":"HAT2","date":"2024-05-02"},{"date":"2024-05-03"}],"tags":["a","b"]}`))
	got, err := Args(map[string]Expr{
		"flight_number": MustParse("$result.flights[*].flight_number"),
		"date":          MustParse("$result.flights[*].date"),
	}, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"date":"2024-05-01","flight_number":"HAT1"}`, `{"date":"2024-05-02","flight_number":"HAT2"}`}
	if d := cmp.Diff(want, texts(got)); d != "" {
		t.Errorf("zipped (-want +got):\n%s", d)
	}
	got, _ = Args(map[string]Expr{
		"flight_number": MustParse("$result.flights[*].flight_number"),
		"tag":           MustParse("$result.tags[*]"),
	}, s, 0)
	want = []string{`{"flight_number":"HAT1","tag":"a"}`, `{"flight_number":"HAT1","tag":"b"}`, `{"flight_number":"HAT2","tag":"a"}`, `{"flight_number":"HAT2","tag":"b"}`}
	if d := cmp.Diff(want, texts(got)); d != "" {
		t.Errorf("two lists (-want +got):\n%s", d)
	}
	// The same over the parsed document.
	s.Site.Doc()
	got, _ = Args(map[string]Expr{
		"flight_number": MustParse("$result.flights[*].flight_number"),
		"date":          MustParse("$result.flights[*].date"),
	}, s, 0)
	if len(got) != 2 || string(got[1]) != `{"date":"2024-05-02","flight_number":"HAT2"}` {
		t.Errorf("zipped over the document: %s", texts(got))
	}
}

func texts(raws []json.RawMessage) []string {
	var out []string
	for _, r := range raws {
		out = append(out, string(r))
	}
	return out
}

// TestSaid: the customer's words pick the element of a list they named,
// and $said finds values of a kind or shape in what they said.
func TestSaid(t *testing.T) {
	s := &Scope{}
	s.Said.Add("Hi, I'd like to return the Digital camera from order #W2, not #W1. My email is Ann.Lee@example.com.")
	s.Said.Add("Also reservation ZFA04Y, and my zip is 78260!")
	s.Add(0, NewResult("get_user_details", `{"orders":["#W1x","#W2","#W3"],"reservations":["ABC123","ZFA04Y"],"types":{"Digital Camera":"p1","Laptop":"p2"}}`))
	s.Add(1, NewResult("get_order_details", `{"items":[{"name":"Laptop","product_id":"p2"},{"name":"Digital Camera","product_id":"p1"}]}`))
	for _, tc := range []struct {
		call       int
		expr, want string
	}{
		{0, "$result.orders[said]", `["#W2"]`},
		{0, "$result.reservations[said]", `["ZFA04Y"]`},
		{0, "$result.types[said]", `["p1"]`},
		{1, "$result.items[said.name].product_id", `["p1"]`},
		{1, "$said[email][-1]", `["Ann.Lee@example.com"]`},
		{1, `$said["#A9"][*]`, `["#W2","#W1"]`},
		{1, `$said["XXXXXX"][*]`, `["ZFA04Y"]`},
		{1, `$said["99999"][0]`, `["78260"]`},
	} {
		s.Site = s.Calls[tc.call]
		vs, err := MustParse(tc.expr).Eval(s)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if got := jsontext.Canonical(vs); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
		// Over the parsed document, the same.
		s.Site.Doc()
		vs, _ = MustParse(tc.expr).Eval(s)
		if got := jsontext.Canonical(vs); got != tc.want {
			t.Errorf("%s over the document = %s, want %s", tc.expr, got, tc.want)
		}
	}
	// "#W1x" is not said: #W1 is, but not as the whole token.
	if (&s.Said).Named("#W1x") {
		t.Error(`"#W1x" counted as said`)
	}
	var none Scope
	none.Add(0, NewResult("t", `{"orders":["#W2"]}`))
	if vs, err := MustParse("$result.orders[said]").Eval(&none); err != nil || len(vs) != 0 {
		t.Errorf("nothing said: %v, %v", vs, err)
	}
}

func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		v                 string
		exact, wide, runs string
	}{
		{"#W8855135", "#A9999999", "#XXXXXXXX", "#X+"},
		{"ZFA04Y", "AAA99A", "XXXXXX", "X+"},
		{"sofia_li_9219", "aaaaa_aa_9999", "xxxxx_xx_9999", "x+_x+_9+"},
		{"a+b", `a\+a`, `x\+x`, `x+\+x+`},
		{"Ann", "Aaa", "ZZZ", "Z+"},
	} {
		for level, want := range []string{tc.exact, tc.wide, tc.runs} {
			if got := ShapeOf(tc.v, ShapeLevel(level)); got != want {
				t.Errorf("ShapeOf(%q, %d) = %q, want %q", tc.v, level, got, want)
			}
			if !MatchShape(want, tc.v) {
				t.Errorf("%q does not match its own shape %q", tc.v, want)
			}
		}
	}
	for shape, tok := range map[string]string{"#A9999999": "#W885513", "XXXXXX": "zfa04y", "x+_x+_9+": "sofia_li_x", "9+": ""} {
		if MatchShape(shape, tok) {
			t.Errorf("%q matches %q", tok, shape)
		}
	}
}

// TestLinesAndTemplates: a directory joined with a listed name, and a
// prefix plus an id.
func TestLinesAndTemplates(t *testing.T) {
	s := &Scope{}
	r := NewResult("list_directory", "[DIR] sub\n[FILE] a.txt\n[FILE] b c.md\n")
	r.Args = `{"path":"/data/x"}`
	s.Add(0, r)
	checkEval(t, s, map[string]string{
		`$lines`:             `[["[DIR] sub","[FILE] a.txt","[FILE] b c.md"]]`,
		`$lines["[FILE] *"]`: `[["a.txt","b c.md"]]`,
		`$args.path + "/" + $lines["[FILE] *"][*]`:  `["/data/x/a.txt","/data/x/b c.md"]`,
		`$args.path + "/" + $lines["[FILE] *"][-1]`: `["/data/x/b c.md"]`,
		`"#" + $args.path`:                          `["#/data/x"]`,
		`[$lines["[FILE] *"][*]]`:                   `[["a.txt","b c.md"]]`,
	})
	if _, err := MustParse(`$args.nope + "/"`).Eval(s); !errors.Is(err, ErrNoValue) {
		t.Errorf("a template whose part names nothing: %v", err)
	}
	got, err := Args(map[string]Expr{"path": MustParse(`$args.path + "/" + $lines["[FILE] *"][*]`)}, s, 0)
	if err != nil || len(got) != 2 || string(got[0]) != `{"path":"/data/x/a.txt"}` {
		t.Errorf("template fan-out: %s, %v", texts(got), err)
	}
	got, err = Args(map[string]Expr{"names": MustParse(`[$lines["[FILE] *"][*]]`)}, s, 0)
	if err != nil || len(got) != 1 || string(got[0]) != `{"names":["a.txt","b c.md"]}` {
		t.Errorf("array: %s, %v", texts(got), err)
	}
}

func TestCond(t *testing.T) {
	s := &Scope{}
	s.Add(0, NewResult("get_order_details", `{"status":"delivered","n":3,"gift":null,"tags":[],"opts":{"a":1}}`))
	checkConds(t, s, map[string]bool{
		`$result.status == "delivered"`: true,
		`$result.status == "pending"`:   false,
		`$result.n == 3`:                true,
		`$result.status`:                true,
		`$result.gift`:                  false,
		`$result.tags`:                  false,
		`$result.opts`:                  true,
		`$result.nope`:                  false,
		`$result.nope == null`:          false,
	})
	for _, bad := range []string{`"x"`, `$result.a[*] == 1`, `$result.a == nope`} {
		if _, err := ParseCond(bad); err == nil {
			t.Errorf("ParseCond(%q) took it", bad)
		}
	}
	if Equals(MustParse("$result.status"), "delivered").String() != `$result.status == "delivered"` {
		t.Error("Equals")
	}
}

// checkEval evaluates each expression over s and compares its values, as
// canonical JSON, with the wanted.
func checkEval(t *testing.T, s *Scope, cases map[string]string) {
	t.Helper()
	for expr, want := range cases {
		vs, err := MustParse(expr).Eval(s)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := jsontext.Canonical(vs); got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
}

// checkConds parses each condition, checks that it holds in s as want
// says, and that it prints as it was written.
func checkConds(t *testing.T, s *Scope, want map[string]bool) {
	t.Helper()
	for c, w := range want {
		cond, err := ParseCond(c)
		if err != nil {
			t.Errorf("ParseCond(%q): %v", c, err)
			continue
		}
		if got := cond.Holds(s); got != w {
			t.Errorf("%s holds = %v, want %v", c, got, w)
		}
		if cond.String() != c {
			t.Errorf("ParseCond(%q).String() = %q", c, cond.String())
		}
	}
}
