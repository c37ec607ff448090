package oracle

import (
	"math"
	"strings"
	"testing"
	"time"
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
			r, err := readAnswer([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("readAnswer: %v, %v; want an error with %q", r, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.p-tc.p) > 1e-6 || r.from != tc.from || r.word != tc.word {
				t.Errorf("readAnswer = %+v, want p %v from %s word %q", r, tc.p, tc.from, tc.word)
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

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 9, 23, 21, 20, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{"-4", 0, true},
		{now.Add(90 * time.Second).Format(httpTime), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(httpTime), 0, true},
		{"", 0, false},
		{"soon", 0, false},
	} {
		got, ok := retryAfter(tc.v, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

const httpTime = "Mon, 02 Jan 2006 15:04:05 GMT"

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for try := range 4 {
		got = append(got, backoff(try))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff = %v, want %v", got, want)
		}
	}
	if backoff(1000) <= 0 {
		t.Errorf("backoff(1000) = %v: it overflowed", backoff(1000))
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000/v1":                   "http://127.0.0.1:8000/v1/chat/completions",
		"http://127.0.0.1:8000/v1/":                  "http://127.0.0.1:8000/v1/chat/completions",
		"https://example.com/v1/chat/completions":    "https://example.com/v1/chat/completions",
		"http://localhost:11434":                     "http://localhost:11434/chat/completions",
		"https://example.com/openai?api-version=2#x": "https://example.com/openai/chat/completions?api-version=2",
	} {
		got, err := endpoint(in)
		if err != nil || got != want {
			t.Errorf("endpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"ftp://example.com/v1":             "want an http or https URL",
		"127.0.0.1:8000":                   "reading the URL",
		"http:///v1":                       "want an http or https URL",
		"http://me:hunter2@example.com/v1": "a user or password in the URL is not accepted",
	} {
		_, err := endpoint(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("endpoint(%q): %v, want an error with %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("endpoint(%q): the error %q holds the password", in, err)
		}
	}
}

func TestClip(t *testing.T) {
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip kept %q", got)
	}
	s := strings.Repeat("é", 10) // 20 bytes
	got := clip(s, 9)
	if !strings.HasPrefix(got, "éé") || !strings.HasSuffix(got, "éé") || !strings.Contains(got, " […] ") {
		t.Errorf("clip(%q, 9) = %q", s, got)
	}
	if len(got) > 9+len(" […] ") {
		t.Errorf("clip(%q, 9) = %q: longer than asked", s, got)
	}
	for _, r := range got {
		if r == '\uFFFD' {
			t.Errorf("clip cut a rune: %q", got)
		}
	}
}

func TestEndpointErrorHoldsNoPassword(t *testing.T) {
	_, err := endpoint("http://me:hunter2@exa mple.com/v1")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("endpoint: %v; want an error without the password", err)
	}
}
