package jsonrpc

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/hoist-mcp/hoist/jsontext"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		kind   Kind
		id     string
		method string
		isErr  bool
		n      int
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, Request, `1`, "initialize", false, 0},
		{"string id", `{"jsonrpc":"2.0","id":"q-17","method":"tools/call"}`, Request, `"q-17"`, "tools/call", false, 0},
		{"huge id kept raw", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, Request, `123456789012345678901234567890`, "ping", false, 0},
		{"id after params", `{"params":{"id":9,"method":"x"},"method":"tools/call","id":5,"jsonrpc":"2.0"}`, Request, `5`, "tools/call", false, 0},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, Notification, ``, "notifications/initialized", false, 0},
		{"escaped method", `{"jsonrpc":"2.0","method":"a\/b\u0041"}`, Notification, ``, "a/bA", false, 0},
		{"result", `{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"{\"id\":1}","type":"text"}]}}`, Response, `3`, "", false, 0},
		{"error", `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope"}}`, Response, `"x"`, "", true, 0},
		{"error null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, Response, `null`, "", true, 0},
		{"error no id", `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}`, Response, ``, "", true, 0},
		{"spaces", " { \"id\" : 2 ,\t\"method\" : \"ping\" } ", Request, `2`, "ping", false, 0},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`, Batch, ``, "", false, 2},
		{"empty batch", `[ ]`, Batch, ``, "", false, 0},
		{"empty object", `{}`, Invalid, ``, "", false, 0},
		{"scalar", `42`, Invalid, ``, "", false, 0},
		{"numeric method", `{"id":1,"method":5}`, Invalid, `1`, "", false, 0},
		{"not json", `Listening on stdio`, NotJSON, ``, "", false, 0},
		{"two values", `{} {}`, NotJSON, ``, "", false, 0},
		{"invalid utf8", "{\"method\":\"a\xff\"}", NotJSON, ``, "", false, 0},
		{"empty", ``, NotJSON, ``, "", false, 0},
		{"error null beside result", `{"jsonrpc":"2.0","id":4,"result":{},"error":null}`, Response, `4`, "", false, 0},
		{"error null alone", `{"jsonrpc":"2.0","id":4,"error":null}`, Invalid, `4`, "", false, 0},
		{"names are exact", `{"ID":1,"METHOD":"tools/call"}`, Invalid, ``, "", false, 0},
		{"repeated method: the last", `{"id":1,"method":"a","method":"b"}`, Request, `1`, "b", false, 0},
		{"repeated id: the last", `{"id":1,"method":"a","id":"x"}`, Request, `"x"`, "a", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Classify([]byte(tt.line))
			if m.Kind != tt.kind || string(m.ID) != tt.id || m.Method != tt.method || m.IsError != tt.isErr || m.Len != tt.n {
				t.Errorf("Classify(%q) = {%v id=%s method=%q err=%v len=%d}, want {%v id=%s method=%q err=%v len=%d}",
					tt.line, m.Kind, m.ID, m.Method, m.IsError, m.Len, tt.kind, tt.id, tt.method, tt.isErr, tt.n)
			}
		})
	}
}

// TestMessagesValid: for a line already validated, MessagesValid yields what
// Messages does, each element of a batch classified; Messages of a line that
// is not JSON yields it once, as NotJSON.
func TestMessagesValid(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"result":{}},7]`,
		`{"id":2,"error":{"code":1}}`,
		`[]`,
	} {
		want := slices.Collect(Messages([]byte(line)))
		got := slices.Collect(MessagesValid([]byte(line)))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("MessagesValid(%s) = %+v, Messages %+v", line, got, want)
		}
		if len(want) == 0 && line != `[]` || len(want) > 0 && want[0].Kind == NotJSON {
			t.Errorf("Messages(%s) = %+v, want its messages", line, want)
		}
	}
	got := slices.Collect(Messages([]byte(`Listening on stdio`)))
	if len(got) != 1 || got[0].Kind != NotJSON || string(got[0].Raw) != `Listening on stdio` {
		t.Errorf("Messages of a line that is not JSON = %+v, want it once as not-json", got)
	}
	if n := len(slices.Collect(MessagesValid([]byte(`[{"method":"a"},{"method":"b"}]`)))); n != 2 {
		t.Errorf("MessagesValid of a batch of two yields %d messages", n)
	}
}

func TestTrimLine(t *testing.T) {
	for in, want := range map[string]string{"a\n": "a", "a\r\n": "a", "a": "a", "a\r": "a", "\n": "", "a\r\r\n": "a\r", "": ""} {
		if got := string(TrimLine([]byte(in))); got != want {
			t.Errorf("TrimLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzClassify checks Classify against encoding/json on any input: it never
// panics, and its kind, id and method agree with a full decode.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
		`{"id":"a\"b","result":{}}`,
		`[{"method":"x"},1]`,
		`{"method":"m","params":[1,{"a":[]}],"id":-1.5e3}`,
		"{\"a\":\"\\u00e9\",\"error\":null}",
		`"str"`, `nul`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m := Classify(line)
		if !jsontext.Valid(line) {
			if m.Kind != NotJSON {
				t.Fatalf("invalid input classified as %v", m.Kind)
			}
			return
		}
		if !reflect.DeepEqual(ClassifyValid(line), m) {
			t.Fatalf("ClassifyValid(%s) = %+v, Classify %+v", line, ClassifyValid(line), m)
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("valid line does not decode: %v", err)
		}
		switch x := v.(type) {
		case []any:
			if m.Kind != Batch || m.Len != len(x) {
				t.Fatalf("array: got %v len %d, want batch len %d", m.Kind, m.Len, len(x))
			}
		case map[string]any:
			method, hasMethod := x["method"].(string)
			_, hasID := x["id"]
			if hasMethod != (m.Kind == Request || m.Kind == Notification) {
				t.Fatalf("method presence: got kind %v for %s", m.Kind, line)
			}
			if hasMethod && m.Method != method {
				t.Fatalf("method: got %q, want %q", m.Method, method)
			}
			if hasID != (m.ID != nil) {
				t.Fatalf("id presence: got %q for %s", m.ID, line)
			}
			if hasID {
				var id any
				if err := json.Unmarshal(m.ID, &id); err != nil {
					t.Fatalf("id %q is not JSON: %v", m.ID, err)
				}
			}
		default:
			if m.Kind != Invalid {
				t.Fatalf("scalar classified as %v", m.Kind)
			}
		}
	})
}

func TestLooksLikeMessage(t *testing.T) {
	for line, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{}}`:     true,
		`{"id":1,"jsonrpc":"2.0","method":"ping"}`: true,
		`[{"method":"a"}]`:                         true,
		` [ {"jsonrpc":"2.0","id":1,"result":{}}]`: true,
		`[`:                                      true,  // cut short
		`[1,2]`:                                  false, // an array, not a batch
		`[]`:                                     false,
		`[{"level":30}]`:                         false,
		`{"jsonrpc":"2.0","id":1,"res`:           true, // cut short
		`{"level":30,"msg":"listening","pid":7}`: false,
		`{"msg":"a \"method\" in a string"}`:     false,
		`{"nested":{"method":"x"}}`:              false,
		`Listening on stdio`:                     false,
		`debug: loading config`:                  false,
		`42`:                                     false,
		"":                                       false,
		`{"error":{"code":-32700,"message":"parse error"}}`: true,
	} {
		if got := LooksLikeMessage([]byte(line)); got != want {
			t.Errorf("LooksLikeMessage(%q) = %v, want %v", line, got, want)
		}
	}
}

func FuzzLooksLikeMessage(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c\\"}],"method":"x"}`))
	f.Add([]byte(`{"a":"\`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got := LooksLikeMessage(line)
		m := Classify(line)
		if m.Kind == Batch {
			// Any array classifies as a batch; one is traffic when its
			// first element is a message ([1,2] and [] are not).
			var first []byte
			for e := range jsontext.Elements(m.Raw) {
				first = e
				break
			}
			if first != nil && Classify(first).Kind.IsMessage() && !got {
				t.Fatalf("batch %q not recognized", line)
			}
			return
		}
		if m.Kind.IsMessage() && !got {
			t.Fatalf("JSON-RPC line %q not recognized", line)
		}
	})
}
