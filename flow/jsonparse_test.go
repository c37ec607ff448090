package flow

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func stdParse(s string) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false
	}
	return v, json.Valid([]byte(s))
}

var jsonSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+10`, `1E3`, `true`, `false`, `null`, ` {"a" : [1, "x", {"b":null}] } `,
	`"\u00e9\ud83d\ude00\n\"\\\/"`, `"\ud800"`, `"a\u0000b"`, `{"a":1,"a":2}`, `[1,]`, `{"a"}`, `01`, `1.`, `-`, `"\x"`,
	`"tab	in"`, `[1 2]`, `{"user_id":"user_7","orders":["#W7a","#W7b"],"n":12345678901234567890}`, "\"\xff\"",
}

func TestParseJSONAgreesWithStd(t *testing.T) {
	for _, s := range jsonSeeds {
		got, ok := parseJSON(s)
		want, wok := stdParse(s)
		if ok != wok || ok && !reflect.DeepEqual(got, want) {
			t.Errorf("parseJSON(%q) = %#v, %v; encoding/json %#v, %v", s, got, ok, want, wok)
		}
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseJSON(s)
		want, wok := stdParse(s)
		if ok != wok {
			t.Fatalf("parseJSON(%q) ok %v, encoding/json %v", s, ok, wok)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("parseJSON(%q) = %#v, encoding/json %#v", s, got, want)
		}
	})
}

func TestEvalRawAgreesWithParsed(t *testing.T) {
	docs := []string{
		userDoc,
		` { "a" : [ {"b": 1}, {"c": 2}, {"b": [3, 4]} ], "a2": {"x": {"y": "z"}}, "e\u0073c": "q" } `,
		`[1, [2, 3], {"k": "v"}]`, `"just a string"`, `plain text`, `42`, `{}`, `[]`,
	}
	exprs := []string{
		"$result", "$result.a", "$result.a[0].b", "$result.a[*].b", "$result.a[-1].b[1]", "$result.a[5]",
		"$result.a2.x.y", `$result["esc"]`, "$result[1][-1]", "$result[*]", "$result[2].k",
		"$result.nope", "$result[0]", "$result.a[*]", "$result.a[-4]", "$result.user_id", "$result.items[*].item_id",
	}
	for _, doc := range docs {
		for _, expr := range exprs {
			b := MustParseBinding(expr)
			raw := NewResult("t", doc)
			parsed := NewResult("t", doc)
			parsed.Doc()
			rv, rerr := b.Eval(&Scope{Site: raw})
			pv, perr := b.Eval(&Scope{Site: parsed})
			if (rerr == nil) != (perr == nil) || Canonical(rv) != Canonical(pv) {
				t.Errorf("%s over %s: raw %s %v, parsed %s %v", expr, doc, Canonical(rv), rerr, Canonical(pv), perr)
			}
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\u2028\u2029", "\x00\x1f\n\r\t", "\xff\xfe", "é😀", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(map[string]any{s: []any{s, json.Number("1"), true, nil}})
		if got := Canonical(map[string]any{s: []any{s, json.Number("1"), true, nil}}); got != string(want) {
			t.Fatalf("Canonical = %s, json.Marshal %s", got, want)
		}
	})
}
