package jsontext

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var foldSeeds = []string{
	`{"name":"a"}`, `{"Name":"a"}`, `{"name":"a","Name":"b"}`, `{"Name":"b","name":"a"}`,
	`{"NAME":1,"nAmE":2}`, `{"n\u0061me":"x"}`, `{"N\u0041ME":"x","name":"y"}`, `{"na\u212Ae":1}`,
	`{"\u212Aind":1,"kind":2}`, `{"kind":2,"\u212Aind":1}`, `{"argument\u017f":{},"arguments":[]}`,
	`{"arguments":[],"argument\u017f":{}}`, `{"name":1,"name":2}`, `{}`, `{"nam":1,"namee":2}`,
	`{"\u0130d":1}`, `{"\u0131d":1}`, `{"ıd":1,"id":2}`, `{"id":2,"İd":1}`,
}

// goStruct is what encoding/json fills for a struct field tagged name.
func goStruct(obj []byte, name string) ([]byte, bool) {
	typ := reflect.StructOf([]reflect.StructField{{
		Name: "V", Type: reflect.TypeFor[*json.RawMessage](), Tag: reflect.StructTag(`json:"` + name + `"`),
	}})
	s := reflect.New(typ)
	if json.Unmarshal(obj, s.Interface()) != nil {
		return nil, false
	}
	return deref(s.Elem().Field(0).Interface().(*json.RawMessage))
}

func deref(v *json.RawMessage) ([]byte, bool) {
	if v == nil {
		return nil, false
	}
	return *v, true
}

// checkFold holds LookupFold to encoding/json's struct reading, and odd to
// the exact reading's disagreement.
func checkFold(t *testing.T, obj []byte) {
	t.Helper()
	if !Valid(obj) || Kind(obj) != '{' {
		return
	}
	for _, name := range []string{"name", "arguments", "kind", "id"} {
		val, found, odd := LookupFold(obj, name)
		want, wfound := goStruct(obj, name)
		if found != wfound || !bytes.Equal(val, want) {
			t.Fatalf("LookupFold(%s, %q) = %s, %v; encoding/json's struct reads %s, %v", obj, name, val, found, want, wfound)
		}
		exact, efound := Lookup(obj, name)
		agree := efound == found && bytes.Equal(exact, val)
		if odd == "" && !agree {
			t.Fatalf("LookupFold(%s, %q): no odd member, but the exact reading is %s, %v", obj, name, exact, efound)
		}
	}
}

func TestLookupFold(t *testing.T) {
	for _, s := range append(foldSeeds, seeds...) {
		checkFold(t, []byte(s))
	}
	if _, _, odd := LookupFold([]byte(`{"name":"a","Name":"b"}`), "name"); odd != "Name" {
		t.Errorf("odd = %q, want Name", odd)
	}
	if _, _, odd := LookupFold([]byte(`{"Name":"b","name":"a"}`), "name"); odd != "" {
		t.Errorf("odd = %q, want none: the last is spelled exactly", odd)
	}
}

func FuzzLookupFold(f *testing.F) {
	for _, s := range append(foldSeeds, seeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFold(t, b) })
}

func TestOddName(t *testing.T) {
	for in, want := range map[string]string{
		`{"order_id":"#W1a","reason":"x"}`:         "",
		`{"Order_ID":"#W1a"}`:                      "Order_ID",
		`{"a":[{"b":1},{"first_Name":2}]}`:         "a[1].first_Name",
		`{"rea\u017fon":"x"}`:                      "reaſon",
		`{"\u212aey":1}`:                           "\u212aey",
		`{"a":"\ud800"}`:                           "a",
		`{"a":["x","\udc00y"]}`:                    "a[1]",
		`{"a\ud800":1}`:                            "a\ufffd",
		`{"a\ud83d\ude00":1}`:                      "",
		`{"payment_methods":[{"payment_id":"x"}]}`: "",
	} {
		if got := OddName([]byte(in)); got != want {
			t.Errorf("OddName(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestLenient(t *testing.T) {
	for in, want := range map[string]string{
		"{\"a\":\"\xff\"}":           "{\"a\":\"\ufffd\"}",
		"\xef\xbb\xbf{\"a\":1}":      `{"a":1}`,
		`{"a":NaN,"b":-Infinity}`:    `{"a":null,"b":null}`,
		`{"a":"NaN","b":[Infinity]}`: `{"a":"NaN","b":[null]}`,
	} {
		got, _, ok := Lenient([]byte(in))
		if !ok || string(got) != want {
			t.Errorf("Lenient(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{`{"a":1}`, `{"a":}`, "not json \xff"} {
		if _, _, ok := Lenient([]byte(in)); ok {
			t.Errorf("Lenient(%q) forgave something", in)
		}
	}
}
