package jsonrpc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// checkLenient: the lenient reading is encoding/json's into a tagged
// struct, and when it names no odd member, the exact reading (Classify)
// says the same.
func checkLenient(t *testing.T, line []byte) {
	l := ClassifyLenient(line)
	if l.Forgiven != "" || l.Kind == NotJSON || l.Kind == Batch {
		return
	}
	var s struct {
		ID     *json.RawMessage `json:"id"`
		Method *json.RawMessage `json:"method"`
		Params *json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &s) == nil {
		if got, want := l.ID, s.ID; want != nil && string(got) != string(*want) {
			t.Fatalf("ClassifyLenient(%s).ID = %s, encoding/json reads %s", line, got, *want)
		}
		if got, want := l.Params, s.Params; want != nil && string(got) != string(*want) {
			t.Fatalf("ClassifyLenient(%s).Params = %s, encoding/json reads %s", line, got, *want)
		}
	}
	if l.Odd == "" {
		if m := Classify(line); !reflect.DeepEqual(m, l.Message) {
			t.Fatalf("ClassifyLenient(%s) names no odd member but reads %+v, Classify %+v", line, l.Message, m)
		}
	}
}

func FuzzClassifyLenient(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"ID":1,"Method":"x","PARAMS":[]}`, `{"method":"a","Method":"b"}`, `{"Method":"b","method":"a"}`,
		`{"id":1,"id":2,"method":"m"}`, `{"\u0069d":1,"method":"m"}`, `{"method":"a\ud800","id":1}`,
		`{"id":1,"result":{},"Error":{"code":1}}`, `[{"id":1,"method":"m"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkLenient(t, line) })
}
