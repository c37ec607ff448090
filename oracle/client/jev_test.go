package client

import (
	"strings"
	"testing"
	"time"
)

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

func TestEndpointErrorHoldsNoPassword(t *testing.T) {
	_, err := endpoint("http://me:hunter2@exa mple.com/v1")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("endpoint: %v; want an error without the password", err)
	}
}
