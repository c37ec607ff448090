package oracle

import (
	"math"
	"strings"
	"testing"
)

func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		p    float64
		from Source
		word string
		err  string
	}{
		{"text yes", `{"choices":[{"message":{"content":"Yes"}}]}`, 1, FromText, "yes", ""},
		{"text no with punctuation", `{"choices":[{"message":{"content":" No."}}]}`, 0, FromText, "no", ""},
		{"text in markdown", `{"choices":[{"message":{"content":"**yes** — she agreed"}}]}`, 1, FromText, "yes", ""},
		{"text neither", `{"choices":[{"message":{"content":"Maybe"}}]}`, 0, "", "", "neither yes nor no"},
		{"text empty", `{"choices":[{"message":{"content":""}}]}`, 0, "", "", "answered nothing"},
		{"null content", `{"choices":[{"message":{"content":null}}]}`, 0, "", "", "answered nothing"},
		{"yes then no tokens", `{"choices":[{"message":{"content":"Yes"},"logprobs":{"content":[
			{"token":"Yes","logprob":-0.2231435513,"top_logprobs":[{"token":"Yes","logprob":-0.2231435513},{"token":"No","logprob":-1.6094379124}]}]}}]}`,
			0.8, FromLogprobs, "yes", ""},
		{"a blank token first, byte-level markers, two spellings of yes", `{"choices":[{"message":{"content":"\nNo"},"logprobs":{"content":[
			{"token":"\n","logprob":-0.01,"top_logprobs":[]},
			{"token":"ĠNo","logprob":-0.6931471806,"top_logprobs":[{"token":"ĠNo","logprob":-0.6931471806},{"token":"ĠYes","logprob":-1.0986122887},{"token":"yes","logprob":-2.1972245773},{"token":"The","logprob":-3}]}]}}]}`,
			(1.0/3 + 1.0/9) / (0.5 + 1.0/3 + 1.0/9), FromLogprobs, "no", ""},
		{"the chosen token alone", `{"choices":[{"message":{"content":"No"},"logprobs":{"content":[{"token":"No","logprob":-0.05}]}}]}`,
			0, FromLogprobs, "no", ""},
		{"no yes or no among the alternatives: the text decides", `{"choices":[{"message":{"content":"Yes"},"logprobs":{"content":[
			{"token":"Sure","logprob":-0.1,"top_logprobs":[{"token":"Sure","logprob":-0.1},{"token":"Okay","logprob":-2.4}]}]}}]}`,
			1, FromText, "yes", ""},
		{"logprobs null", `{"choices":[{"message":{"content":"no"},"logprobs":null}]}`, 0, FromText, "no", ""},
		{"not JSON", `<html>`, 0, "", "", "not a JSON object"},
		{"no choices", `{"choices":[]}`, 0, "", "", "no choices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ReadAnswer([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ReadAnswer: %v, %v; want an error with %q", r, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.P-tc.p) > 1e-6 || r.From != tc.from || r.Word != tc.word {
				t.Errorf("ReadAnswer = %+v, want p %v from %s word %q", r, tc.p, tc.from, tc.word)
			}
		})
	}
}

func TestYesNo(t *testing.T) {
	for s, want := range map[string]int{
		"Yes": 1, " yes": 1, "YES.": 1, "▁Yes": 1, "Ġyes": 1, "No": -1, "no,": -1, "\nNO": -1,
		"Yesterday": 0, "Not": 0, "": 0, "N": 0, "Ye": 0,
	} {
		if got := yesNo(s); got != want {
			t.Errorf("yesNo(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestClip(t *testing.T) {
	if got := Clip("short", 10); got != "short" {
		t.Errorf("Clip kept %q", got)
	}
	s := strings.Repeat("é", 10) // 20 bytes
	got := Clip(s, 9)
	if !strings.HasPrefix(got, "éé") || !strings.HasSuffix(got, "éé") || !strings.Contains(got, " […] ") {
		t.Errorf("Clip(%q, 9) = %q", s, got)
	}
	if len(got) > 9+len(" […] ") {
		t.Errorf("Clip(%q, 9) = %q: longer than asked", s, got)
	}
	for _, r := range got {
		if r == '\uFFFD' {
			t.Errorf("Clip cut a rune: %q", got)
		}
	}
}

// TestKeyOfClippedCall: a question shows a long call's arguments clipped
// (their head and tail), so two calls that differ only in the middle make
// the same prompt; their keys must still differ, or a cached yes for one
// would answer for the other (docs/approvals.md).
func TestKeyOfClippedCall(t *testing.T) {
	x := Exchange{Said: "Shall I send this note?", Reply: "Yes."}
	long := func(middle string) []byte {
		return []byte(`{"note":"` + strings.Repeat("a", 3000) + middle + strings.Repeat("z", 3000) + `"}`)
	}
	a := Confirmation(x, Call{Tool: "send_note", Arguments: long("harmless")})
	b := Confirmation(x, Call{Tool: "send_note", Arguments: long("wire the money")})
	if a.Prompt != b.Prompt {
		t.Fatal("the prompts differ: the test needs calls clipped to one prompt")
	}
	if Key("m", a) == Key("m", b) {
		t.Error("two calls clipped to one prompt have one key: a cached answer for one answers for the other")
	}
	short := Confirmation(x, Call{Tool: "send_note", Arguments: []byte(`{"note":"hi"}`)})
	if got := Key("m", short); got != Key("m", Confirmation(x, Call{Tool: "send_note", Arguments: []byte(`{"note":"hi"}`)})) {
		t.Errorf("one short call, two keys: %s", got)
	}
}
