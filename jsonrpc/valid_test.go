package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValid(t *testing.T) {
	for _, s := range []string{
		`{}`, `[]`, ` {"a" : [1, -2.5e+3, true, false, null, "x\u00e9\n"]} `, `"é😀"`, `0`, `-0.0E-0`,
		`{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `1e`, `+1`, `"\x"`, "\"a\x01\"", `"\u12g4"`, `tru`, `nul`, `{"a"}`,
		`{"a":1}{}`, ``, ` `, "\"\xff\"", `[` + strings.Repeat(`"abcdefgh\"ijklmn"`, 9) + `]`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
	} {
		want := utf8.ValidString(s) && json.Valid([]byte(s))
		if got := Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.60q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c\\d\u0041"}]}`, `"abcdefghijklmnop\"q"`, `-12.5e-3`, `[true,false,null]`, "\"\xc3\xa9\"", `{"a":"\u00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := utf8.Valid(b) && json.Valid(b)
		if got := Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, want %v", b, got, want)
		}
	})
}

var benchLine = []byte(`{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"` + strings.Repeat(`abc def \"q\" {\"k\":1} é `, 40000) + `"}]}}`)

// BenchmarkValid compares Valid with the standard library's checks on a
// 1 MiB tool result; the ratio is what matters.
func BenchmarkValid(b *testing.B) {
	b.Run("hoist", func(b *testing.B) {
		b.SetBytes(int64(len(benchLine)))
		for i := 0; i < b.N; i++ {
			Valid(benchLine)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchLine)))
		for i := 0; i < b.N; i++ {
			_ = utf8.Valid(benchLine) && json.Valid(benchLine)
		}
	})
}
