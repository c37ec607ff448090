package jsontext

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// seeds are texts every differential test and fuzz target starts from.
var seeds = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+10`, `1E3`, `true`, `false`, `null`,
	` {"a" : [1, -2.5e+3, true, false, null, "x\u00e9\n"]} `, `"é😀"`, `-0.0E-0`,
	`"\u00e9\ud83d\ude00\n\"\\\/"`, `"\ud800"`, `"\udc00\ud800x"`, `"a\u0000b"`, `{"a":1,"a":2}`,
	`{"ID":1,"id":2}`, `{"a\u0062":3,"ab":4}`, `[1,]`, `{"a"}`, `01`, `1.`, `.5`, `1e`, `+1`, `-`,
	`"\x"`, "\"a\x01\"", `"\u12g4"`, `tru`, `nul`, `{"a":1}{}`, ``, ` `, "\"\xff\"", "\"\xc3\xa9\"",
	`"tab	in"`, `[1 2]`, `{"a":1,}`, `{"user_id":"user_7","orders":["#W7a","#W7b"],"n":12345678901234567890}`,
	`[` + strings.Repeat(`"abcdefgh\"ijklmn"`, 9) + `]`, `"<a href=\"x\">&amp;</a>` + "\u2028\u2029" + `"`,
	`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"{\"k\":[1,2]}"}],"isError":false}}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat("}", 9999),
}

// stdValid is the standard library's answer to Valid (depth aside:
// encoding/json's limit is the same 10000).
func stdValid(b []byte) bool { return utf8.Valid(b) && json.Valid(b) }

func stdParse(b []byte) (any, bool) {
	if !stdValid(b) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func TestValid(t *testing.T) {
	for _, s := range seeds {
		if got, want := Valid([]byte(s)), stdValid([]byte(s)); got != want {
			t.Errorf("Valid(%.60q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidDepth(t *testing.T) {
	deep := []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000))
	wrapped := []byte(`{"message":` + string(deep) + `}`)
	if !Valid(deep) || Valid(wrapped) || !ValidDepth(wrapped, MaxDepth+1) {
		t.Errorf("depth rule: Valid(10000 deep) %v, Valid(wrapped) %v, ValidDepth(wrapped, MaxDepth+1) %v; want true, false, true",
			Valid(deep), Valid(wrapped), ValidDepth(wrapped, MaxDepth+1))
	}
	if _, ok := Parse(deep); !ok {
		t.Error("Parse refuses a text 10000 deep, which Valid accepts")
	}
	if _, ok := Parse([]byte("[" + string(deep) + "]")); ok {
		t.Error("Parse accepts a text 10001 deep, which Valid refuses")
	}
}

func TestParseAgreesWithStd(t *testing.T) {
	for _, s := range seeds {
		checkParse(t, []byte(s))
	}
}

func checkParse(t *testing.T, b []byte) {
	t.Helper()
	if v, ok := Parse(b); ok && !reflect.DeepEqual(ParseValid(string(b)), v) {
		t.Fatalf("ParseValid(%.60q) = %#v, Parse %#v", b, ParseValid(string(b)), v)
	}
	got, ok := Parse(b)
	if ok != Valid(b) {
		t.Fatalf("Parse(%.60q) ok %v, Valid %v", b, ok, Valid(b))
	}
	want, wok := stdParse(b)
	if ok != wok {
		t.Fatalf("Parse(%.60q) ok %v, encoding/json %v", b, ok, wok)
	}
	if ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse(%.60q) = %#v, encoding/json %#v", b, got, want)
	}
}

func TestMembersExactCaseLastWins(t *testing.T) {
	obj := []byte(`{"ID":1,"id":2,"id":3,"a\u0062":4}`)
	var names []string
	for k := range Members(obj) {
		names = append(names, string(k))
	}
	if want := []string{"ID", "id", "id", "ab"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Members names = %q, want %q", names, want)
	}
	if v, ok := Lookup(obj, "id"); !ok || string(v) != "3" {
		t.Errorf(`Lookup(id) = %s, %v; want 3 (the last)`, v, ok)
	}
	if _, ok := Lookup(obj, "Id"); ok {
		t.Error("Lookup(Id) found a member: names are compared exactly")
	}
	tree, _ := Parse(obj)
	if tree.(map[string]any)["id"] != json.Number("3") {
		t.Errorf("Parse kept id %v, want the last, 3", tree.(map[string]any)["id"])
	}
}

// checkScan compares Members, Elements, Lookup, Offset, Len and Compact with
// encoding/json on a valid text.
func checkScan(t *testing.T, b []byte) {
	t.Helper()
	if !Valid(b) {
		return
	}
	var c bytes.Buffer
	json.Compact(&c, b)
	if got := AppendCompact(nil, b); !bytes.Equal(got, c.Bytes()) {
		t.Fatalf("AppendCompact(%.60q) = %.60q, json.Compact %.60q", b, got, c.Bytes())
	}
	switch Kind(b) {
	case '{':
		want := map[string]json.RawMessage{}
		json.Unmarshal(b, &want)
		got := map[string]json.RawMessage{}
		n := 0
		for k, v := range Members(b) {
			n++
			if off := Offset(b, v); !bytes.Equal(b[off:off+len(v)], v) {
				t.Fatalf("Offset of %q's value is %d, which holds other bytes", k, off)
			}
			got[string(k)] = v
			if lv, ok := Lookup(b, string(k)); !ok {
				t.Fatalf("Lookup(%q) found nothing", k)
			} else {
				got[string(k)] = lv
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Members(%.60q) = %q, encoding/json %q", b, got, want)
		}
		if Len(b) != n {
			t.Fatalf("Len = %d, Members yielded %d", Len(b), n)
		}
	case '[':
		var want []json.RawMessage
		json.Unmarshal(b, &want)
		got := []json.RawMessage{}
		for v := range Elements(b) {
			got = append(got, v)
		}
		if len(got) != len(want) {
			t.Fatalf("Elements(%.60q) gave %d, encoding/json %d", b, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("Elements(%.60q)[%d] = %q, encoding/json %q", b, i, got[i], want[i])
			}
		}
	case '"':
		var want string
		json.Unmarshal(b, &want)
		tok := bytes.TrimSpace(b)
		if got := Unquote(tok); got != want {
			t.Fatalf("Unquote(%.60q) = %q, encoding/json %q", tok, got, want)
		}
	}
}

func TestScanAgreesWithStd(t *testing.T) {
	for _, s := range seeds {
		checkScan(t, []byte(s))
	}
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := AppendString(nil, s, HTML); !bytes.Equal(got, want) {
		t.Fatalf("AppendString(%q, HTML) = %s, json.Marshal %s", s, got, want)
	}
	plain := AppendString(nil, s, Plain)
	if !Valid(plain) {
		t.Fatalf("AppendString(%q, Plain) = %q is not valid JSON", s, plain)
	}
	var back, wantBack string
	json.Unmarshal(plain, &back)
	json.Unmarshal(want, &wantBack)
	if back != wantBack {
		t.Fatalf("AppendString(%q, Plain) reads back as %q, want %q", s, back, wantBack)
	}
	if bytes.ContainsAny(plain, "\u2028\u2029") {
		t.Fatalf("AppendString(%q, Plain) = %q holds U+2028 or U+2029 unescaped", s, plain)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range append(seeds, "\b\f\x00\x1f\x7f", "a\xffb\xc3", "<>&", "\u2028x\u2029") {
		checkString(t, s)
	}
	if got := string(AppendString(nil, "<b>", Plain)); got != `"<b>"` {
		t.Errorf("Plain escaped HTML: %s", got)
	}
}

func checkValue(t *testing.T, b []byte) {
	t.Helper()
	v, ok := Parse(b)
	if !ok {
		return
	}
	want, err := json.Marshal(v)
	if err != nil {
		return
	}
	if got := AppendValue(nil, v, HTML); !bytes.Equal(got, want) {
		t.Fatalf("AppendValue(%.60q) = %.60q, json.Marshal %.60q", b, got, want)
	}
	if c, ok := CanonicalText(b); !ok || c != string(want) {
		t.Fatalf("CanonicalText(%.60q) = %.60q, %v", b, c, ok)
	}
}

func TestAppendValue(t *testing.T) {
	for _, s := range seeds {
		checkValue(t, []byte(s))
	}
}

func checkValueLen(t *testing.T, b []byte) {
	t.Helper()
	n, ok := ValueLen(b)
	if !ok {
		return
	}
	if !Valid(b[:n]) {
		t.Fatalf("ValueLen(%.60q) = %d, but %.60q is not valid", b, n, b[:n])
	}
	if Kind(b[:1]) == 0 {
		t.Fatalf("ValueLen(%.60q) accepted leading whitespace", b)
	}
}

func TestValueLen(t *testing.T) {
	for in, want := range map[string]int{`"a\"b"]x`: 6, `123,`: 3, `{"a":[1]}}`: 9, `[1,2] 3`: 5, `null`: 4} {
		if n, ok := ValueLen([]byte(in)); !ok || n != want {
			t.Errorf("ValueLen(%q) = %d, %v; want %d", in, n, ok, want)
		}
	}
	for _, in := range []string{` 1`, `"abc`, `[1,`, `x`, ""} {
		if n, ok := ValueLen([]byte(in)); ok {
			t.Errorf("ValueLen(%q) = %d, true; want false", in, n)
		}
	}
}

func checkPrefix(t *testing.T, b []byte) {
	t.Helper()
	if !Valid(b) || Kind(b) != '{' {
		return
	}
	var all [][]byte
	for k := range Members(b) {
		all = append(all, k)
	}
	var names [][]byte
	if end := ScanPrefix(b, func(n, _ []byte) bool { names = append(names, bytes.Clone(n)); return true }); end != PrefixClosed {
		t.Fatalf("ScanPrefix(whole %.60q) = %v, want closed", b, end)
	}
	if !sameNames(names, all) {
		t.Fatalf("ScanPrefix names %q, Members %q", names, all)
	}
	for cut := 0; cut < len(b); cut += 1 + len(b)/50 {
		var got [][]byte
		end := ScanPrefix(b[:cut], func(n, v []byte) bool {
			if v != nil {
				got = append(got, bytes.Clone(n))
			}
			return true
		})
		if end == PrefixBad {
			t.Fatalf("ScanPrefix(%.60q cut at %d) = bad, want cut", b, cut)
		}
		if len(got) > len(all) || !sameNames(got, all[:len(got)]) {
			t.Fatalf("ScanPrefix(%.60q cut at %d) names %q, not a prefix of %q", b, cut, got, all)
		}
	}
}

func TestScanPrefixValues(t *testing.T) {
	line := []byte(`{"t_ms":15,"from":"server","message":{"jsonrpc":"2.0","id":5,"result":{broken}},"x":"cut`)
	got := map[string]string{}
	ScanPrefix(line, func(n, v []byte) bool {
		if v == nil {
			got[string(n)] = "<nil>"
		} else {
			got[string(n)] = string(v)
		}
		return true
	})
	want := map[string]string{"t_ms": "15", "from": `"server"`, "message": `{"jsonrpc":"2.0","id":5,"result":{broken}}`, "x": "<nil>"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ScanPrefix values = %q, want %q", got, want)
	}
}

func TestScanPrefix(t *testing.T) {
	for _, s := range seeds {
		checkPrefix(t, []byte(s))
	}
	for in, want := range map[string]PrefixEnd{`Listening on stdio`: PrefixBad, `{"a":1 "b"`: PrefixBad, `[1]`: PrefixBad, `{"a":"xy`: PrefixCut, ` `: PrefixCut} {
		if got := ScanPrefix([]byte(in), func(_, _ []byte) bool { return true }); got != want {
			t.Errorf("ScanPrefix(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzJSON holds every function of the package to encoding/json on any
// input.
func FuzzJSON(f *testing.F) {
	for _, s := range seeds {
		if len(s) < 1000 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), stdValid(b); got != want {
			t.Fatalf("Valid(%q) = %v, want %v", b, got, want)
		}
		checkParse(t, b)
		checkScan(t, b)
		checkValue(t, b)
		checkValueLen(t, b)
		checkPrefix(t, b)
		checkString(t, string(b))
		checkValidMembers(t, b)
	})
}

// checkValidMembers: AppendValidMembers accepts what ValidDepth does, and
// for an object finds the members Members yields, names unquoted, in order;
// what it appends to is left as it was when the text is not valid.
func checkValidMembers(t *testing.T, b []byte) {
	t.Helper()
	for _, depth := range []int{1, 2, MaxDepth} {
		dst := []Span{{1, 2, 3, 4}}
		got, ok := AppendValidMembers(dst, b, depth)
		if ok != ValidDepth(b, depth) {
			t.Fatalf("AppendValidMembers(%.60q, %d) ok = %v, ValidDepth %v", b, depth, ok, !ok)
		}
		if got[0] != dst[0] {
			t.Fatalf("AppendValidMembers overwrote what it appends to")
		}
		if !ok {
			if len(got) != 1 {
				t.Fatalf("AppendValidMembers(%.60q) appended %d spans to a text it refused", b, len(got)-1)
			}
			continue
		}
		var want [][2]string
		if Kind(b) == '{' {
			for k, v := range Members(b) {
				want = append(want, [2]string{string(k), string(v)})
			}
		}
		var have [][2]string
		for _, m := range got[1:] {
			have = append(have, [2]string{string(m.Name(b)), string(m.Value(b))})
		}
		if !reflect.DeepEqual(have, want) {
			t.Fatalf("AppendValidMembers(%.60q) = %q, Members %q", b, have, want)
		}
	}
}

func TestAppendValidMembers(t *testing.T) {
	for _, s := range append(seeds, `{"a\u0041":1,"b":{"c":[1,2]},"a":"x"}`, `{"t":{"m":{}}}`, `[{"a":1}]`, `{"a":1} x`) {
		checkValidMembers(t, []byte(s))
	}
	b := []byte(`{"t_ms":1,"message":{"id":2}}`)
	got, ok := AppendValidMembers(nil, b, MaxDepth)
	if !ok || len(got) != 2 || string(got[1].Name(b)) != "message" || string(got[1].Value(b)) != `{"id":2}` {
		t.Errorf("AppendValidMembers(%s) = %v, %v", b, got, ok)
	}
	if _, ok := AppendValidMembers(nil, b, 1); ok {
		t.Errorf("AppendValidMembers took an object nested deeper than its limit")
	}
}

var benchLine = []byte(`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"` + strings.Repeat(`abc def \"q\" {\"k\":1} é `, 40000) + `"}]}}`)

// BenchmarkValid compares Valid with the standard library's checks on a
// 1 MiB tool result; the ratio is what matters.
func BenchmarkValid(b *testing.B) {
	b.Run("hoist", func(b *testing.B) {
		b.SetBytes(int64(len(benchLine)))
		for b.Loop() {
			Valid(benchLine)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchLine)))
		for b.Loop() {
			_ = stdValid(benchLine)
		}
	})
}

// BenchmarkMembers walks the members of a 1 MiB response, against
// decoding it into raw members with encoding/json.
func BenchmarkMembers(b *testing.B) {
	b.Run("hoist", func(b *testing.B) {
		b.SetBytes(int64(len(benchLine)))
		for b.Loop() {
			for range Members(benchLine) {
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchLine)))
		for b.Loop() {
			var m map[string]json.RawMessage
			json.Unmarshal(benchLine, &m)
		}
	})
}

func sameNames(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
