package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/internal/oracletest"
	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// secret is the key the tests give jev; it must appear nowhere but in the
// Authorization header of the requests.
const secret = "tsk-7f3e9c1a-SECRET-d2b84e60"

const model = "system-one-test"

// timeout is the tests' per-request timeout: distinct from every backoff,
// so the fake clock can tell the timeout's timer from a wait.
const timeout = 7 * time.Second

// clock is a fake client.Clock: waits between tries pass at once and are
// recorded; the timeout's timer fires only when the test sends on expire.
type clock struct {
	now    time.Time
	expire chan time.Time
	mu     sync.Mutex
	waited []time.Duration
}

func newClock() *clock {
	return &clock{now: time.Date(2026, 9, 23, 21, 20, 0, 0, time.UTC), expire: make(chan time.Time)}
}

func (c *clock) Now() time.Time { return c.now }

func (c *clock) After(d time.Duration) <-chan time.Time {
	if d == timeout {
		return c.expire
	}
	c.mu.Lock()
	c.waited = append(c.waited, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- c.now.Add(d)
	return ch
}

func (c *clock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waited)
}

// env is a fake environment for Config.Getenv.
type env map[string]string

func (e env) get(name string) string { return e[name] }

// setup is one jev oracle in front of a fake server, with its cache in a
// directory of the test's own.
type setup struct {
	srv   *oracletest.Server
	clock *clock
	dir   string
	cache *client.Cache
	jev   *client.Jev
	warns *warnings
}

type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

func newSetup(t *testing.T, edit ...func(*client.Config)) *setup {
	t.Helper()
	s := &setup{srv: oracletest.Start(t), clock: newClock(), dir: filepath.Join(t.TempDir(), "oracle-cache"), warns: &warnings{}}
	var err error
	s.cache, err = client.OpenCache(s.dir, s.warns.add)
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.Config{
		URL: s.srv.URL, Model: model, Cache: s.cache, Timeout: timeout,
		Getenv: env{client.EnvKey: secret}.get, Clock: s.clock, Warn: s.warns.add,
	}
	for _, e := range edit {
		e(&cfg)
	}
	s.jev, err = client.NewJev(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { noSecretIn(t, s.dir) })
	return s
}

// confirmQ is a judge's question from the retail demo world.
func confirmQ(reply string) oracle.Question {
	return oracle.Confirmation(oracle.Exchange{
		Said:  "I can cancel order #W1a (1 item, $54.04) for the reason 'no longer needed'. Shall I go ahead?",
		Reply: reply,
	}, oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1a","reason":"no longer needed"}`)})
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestJevLogprobs(t *testing.T) {
	s := newSetup(t)
	s.srv.Push(oracletest.WithLogprobs(0.8), oracletest.WithLogprobs(0.15))
	ctx := context.Background()

	a := s.jev.Ask(ctx, confirmQ("yes please"))
	if !a.Answered || !near(a.PYes, 0.8) || a.From != oracle.FromLogprobs || a.Cached {
		t.Fatalf("first answer %+v, want p_yes 0.8 from logprobs, not cached", a)
	}
	b := s.jev.Ask(ctx, confirmQ("no, wait"))
	if !b.Answered || !near(b.PYes, 0.15) || b.Key == a.Key {
		t.Fatalf("second answer %+v, want p_yes 0.15 under another key than %s", b, a.Key)
	}
	// Asked again: from the cache, the server not asked.
	again := s.jev.Ask(ctx, confirmQ("yes please"))
	if !again.Answered || !again.Cached || !near(again.PYes, 0.8) || again.From != oracle.FromLogprobs || again.Key != a.Key {
		t.Errorf("again %+v, want the cached 0.8 of %s", again, a.Key)
	}
	if n := len(s.srv.Requests()); n != 2 {
		t.Errorf("the server got %d requests, want 2", n)
	}
}

func TestJevText(t *testing.T) {
	for _, tc := range []struct {
		text   string
		p      float64
		reason string // "" when answered
	}{
		{"Yes", 1, ""},
		{"No.", 0, ""},
		{"**yes**, she agreed", 1, ""},
		{"Maybe", 0, "neither yes nor no"},
		{" ", 0, "answered nothing"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			s := newSetup(t)
			s.srv.Default(oracletest.Response{Text: tc.text})
			a := s.jev.Ask(context.Background(), confirmQ("yes"))
			if tc.reason != "" {
				if a.Answered || a.Why != oracle.Failed || !strings.Contains(a.Reason, tc.reason) {
					t.Fatalf("answer %+v, want no answer: %s", a, tc.reason)
				}
				// Not cached: asked again, the server is asked again.
				s.jev.Ask(context.Background(), confirmQ("yes"))
				if n := len(s.srv.Requests()); n != 2 {
					t.Errorf("the server got %d requests, want 2 (a failure is not cached)", n)
				}
				return
			}
			if !a.Answered || a.PYes != tc.p || a.From != oracle.FromText {
				t.Errorf("answer %+v, want p_yes %v from the text", a, tc.p)
			}
		})
	}
}

// TestJevRequest checks what is sent: one POST of a chat-completions
// request, the question's messages, the key in the Authorization header
// and nowhere else.
func TestJevRequest(t *testing.T) {
	s := newSetup(t)
	q := confirmQ("Yes, go ahead.")
	s.jev.Ask(context.Background(), q)
	reqs := s.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the server got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("Authorization %q, want the bearer key", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
	for name, vals := range r.Header {
		if name == "Authorization" {
			continue
		}
		for _, v := range vals {
			if strings.Contains(v, secret) {
				t.Errorf("header %s holds the key", name)
			}
		}
	}
	if bytes.Contains(r.Body, []byte(secret)) || strings.Contains(r.Path+r.Query, secret) {
		t.Errorf("the key is in the body or the URL")
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
		MaxTokens   int     `json:"max_tokens"`
		Temperature float64 `json:"temperature"`
		Logprobs    bool    `json:"logprobs"`
		TopLogprobs int     `json:"top_logprobs"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != model || len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" ||
		body.Messages[0].Content != q.System || body.Messages[1].Content != q.Prompt {
		t.Errorf("body %s does not carry the question to %s", r.Body, model)
	}
	if !body.Logprobs || body.TopLogprobs < 2 || body.Temperature != 0 || body.MaxTokens < 1 {
		t.Errorf("body %s: want logprobs, top_logprobs, temperature 0 and a few tokens", r.Body)
	}
}

func TestJevRetries(t *testing.T) {
	at := func(d time.Duration) string { return newClock().now.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		name     string
		edit     func(*client.Config)
		script   []oracletest.Response
		answered bool
		reason   string
		requests int
		waits    []time.Duration
	}{
		{"429 then an answer, after Retry-After", nil,
			[]oracletest.Response{{Status: 429, RetryAfter: "3"}, oracletest.Yes}, true, "", 2, []time.Duration{3 * time.Second}},
		{"Retry-After as a date", nil,
			[]oracletest.Response{{Status: 503, RetryAfter: at(4 * time.Second)}, oracletest.Yes}, true, "", 2, []time.Duration{4 * time.Second}},
		{"5xx twice, backing off", nil,
			[]oracletest.Response{{Status: 503}, {Status: 502}, oracletest.Yes}, true, "", 3, []time.Duration{500 * time.Millisecond, time.Second}},
		{"5xx every time: bounded", nil,
			[]oracletest.Response{{Status: 500}, {Status: 500}, {Status: 500}, oracletest.Yes},
			false, "answered 500 Internal Server Error, 3 times", 3, []time.Duration{500 * time.Millisecond, time.Second}},
		{"a wait longer than MaxWait is not waited", nil,
			[]oracletest.Response{{Status: 429, RetryAfter: "120"}, oracletest.Yes},
			false, "asked to wait 2m0s, longer than 10s", 1, nil},
		{"more retries", func(c *client.Config) { c.Retries = 4 },
			[]oracletest.Response{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}, oracletest.No},
			true, "", 5, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}},
		{"no retries", func(c *client.Config) { c.Retries = -1 },
			[]oracletest.Response{{Status: 503}, oracletest.Yes}, false, "answered 503 Service Unavailable, 1 times", 1, nil},
		{"a 400 is not tried again, and its message is read", nil,
			[]oracletest.Response{{Status: 400, Body: `{"error":{"message":"The model 'x' does not exist","type":"invalid_request_error"}}`}, oracletest.Yes},
			false, "answered 400 Bad Request: The model 'x' does not exist", 1, nil},
		{"a 401 is not tried again", nil,
			[]oracletest.Response{{Status: 401}, oracletest.Yes}, false, "refused the key (401 Unauthorized)", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edits []func(*client.Config)
			if tc.edit != nil {
				edits = append(edits, tc.edit)
			}
			s := newSetup(t, edits...)
			s.srv.Push(tc.script...)
			a := s.jev.Ask(context.Background(), confirmQ("yes"))
			if a.Answered != tc.answered || !tc.answered && (a.Why != oracle.Failed || !strings.Contains(a.Reason, tc.reason)) {
				t.Errorf("answer %+v, want answered %v (%s)", a, tc.answered, tc.reason)
			}
			if n := len(s.srv.Requests()); n != tc.requests {
				t.Errorf("the server got %d requests, want %d", n, tc.requests)
			}
			if diff := cmp.Diff(tc.waits, s.clock.waits()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJevTimeout: a server that does not answer is given up on when the
// request's timer fires; the fake clock fires it once the request is held.
func TestJevTimeout(t *testing.T) {
	s := newSetup(t)
	s.srv.Push(oracletest.Response{Hang: true})
	done := make(chan oracle.Answer)
	go func() { done <- s.jev.Ask(context.Background(), confirmQ("yes")) }()
	<-s.srv.Hung()
	s.clock.expire <- s.clock.now.Add(timeout)
	a := <-done
	if a.Answered || a.Why != oracle.Failed || !strings.Contains(a.Reason, "did not answer within 7s") {
		t.Errorf("answer %+v, want a timeout", a)
	}
	if len(s.clock.waits()) != 0 {
		t.Errorf("a timeout was tried again: waits %v", s.clock.waits())
	}
	// The next question is asked afresh: nothing was cached.
	if b := s.jev.Ask(context.Background(), confirmQ("yes")); !b.Answered || b.Cached {
		t.Errorf("after the timeout: %+v, want a fresh answer", b)
	}
}

func TestJevCanceled(t *testing.T) {
	t.Run("in flight", func(t *testing.T) {
		s := newSetup(t)
		s.srv.Push(oracletest.Response{Hang: true})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan oracle.Answer)
		go func() { done <- s.jev.Ask(ctx, confirmQ("yes")) }()
		<-s.srv.Hung()
		cancel()
		if a := <-done; a.Answered || a.Why != oracle.Canceled {
			t.Errorf("answer %+v, want canceled", a)
		}
	})
	t.Run("while waiting to try again", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s := newSetup(t, func(c *client.Config) { c.Clock = stoppedClock{} })
		s.srv.Push(oracletest.Response{Status: 503})
		if a := s.jev.Ask(ctx, confirmQ("yes")); a.Answered || a.Why != oracle.Canceled {
			t.Errorf("answer %+v, want canceled", a)
		}
	})
}

// stoppedClock's timers never fire.
type stoppedClock struct{}

func (stoppedClock) Now() time.Time                       { return time.Time{} }
func (stoppedClock) After(time.Duration) <-chan time.Time { return nil }

func TestJevRedirectRefused(t *testing.T) {
	other := oracletest.Start(t)
	s := newSetup(t)
	s.srv.Push(oracletest.Response{Redirect: other.URL + "/chat/completions"})
	a := s.jev.Ask(context.Background(), confirmQ("yes"))
	if a.Answered || a.Why != oracle.Failed || !strings.Contains(a.Reason, "redirected") {
		t.Errorf("answer %+v, want a refused redirect", a)
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the redirect's target got %d requests (and the key)", n)
	}
}

func TestJevUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*client.Config)
		want string
	}{
		{"no key", func(c *client.Config) { c.Getenv = env{}.get }, "no key: set TYPESAFE_API_KEY or TYPESAFE_API_KEY_FILE"},
		{"no URL", func(c *client.Config) { c.URL = "" }, "no model server: set --oracle-url or HOIST_ORACLE_URL"},
		{"no model", func(c *client.Config) { c.Model = "" }, "no model name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t, tc.edit)
			if got := s.jev.Unavailable(); !strings.Contains(got, tc.want) {
				t.Errorf("Unavailable() = %q, want %q", got, tc.want)
			}
			a := s.jev.Ask(context.Background(), confirmQ("yes"))
			if a.Answered || a.Why != oracle.Unset || !strings.Contains(a.Reason, tc.want) || a.Key == "" {
				t.Errorf("answer %+v, want unset (%s) with a key", a, tc.want)
			}
			if n := len(s.srv.Requests()); n != 0 {
				t.Errorf("the server got %d requests", n)
			}
		})
	}
	t.Run("the cache still answers", func(t *testing.T) {
		s := newSetup(t)
		s.srv.Push(oracletest.WithLogprobs(0.7))
		s.jev.Ask(context.Background(), confirmQ("yes"))
		keyless, err := client.NewJev(client.Config{URL: s.srv.URL, Model: model, Cache: s.cache, Getenv: env{}.get})
		if err != nil {
			t.Fatal(err)
		}
		if a := keyless.Ask(context.Background(), confirmQ("yes")); !a.Answered || !a.Cached || !near(a.PYes, 0.7) {
			t.Errorf("answer %+v, want the cached 0.7", a)
		}
	})
}

func TestJevURLFromEnvironment(t *testing.T) {
	srv := oracletest.Start(t)
	j, err := client.NewJev(client.Config{Model: model, Getenv: env{client.EnvKey: secret, client.EnvURL: srv.URL}.get})
	if err != nil {
		t.Fatal(err)
	}
	if a := j.Ask(context.Background(), confirmQ("yes")); !a.Answered {
		t.Errorf("answer %+v, want one from %s", a, srv.URL)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("the server named by %s got %d requests", client.EnvURL, len(srv.Requests()))
	}
	_, err = client.NewJev(client.Config{Model: model, Getenv: env{client.EnvURL: "ftp://example.com"}.get})
	if err == nil || !strings.HasPrefix(err.Error(), "HOIST_ORACLE_URL: want an http or https URL") {
		t.Errorf("a bad HOIST_ORACLE_URL: %v", err)
	}
	_, err = client.NewJev(client.Config{URL: "ftp://example.com", Model: model})
	if err == nil || !strings.HasPrefix(err.Error(), "--oracle-url: want an http or https URL") {
		t.Errorf("a bad --oracle-url: %v", err)
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("  "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := oracletest.Start(t)
	j, err := client.NewJev(client.Config{URL: srv.URL, Model: model, Getenv: env{client.EnvKeyFile: file}.get})
	if err != nil {
		t.Fatal(err)
	}
	j.Ask(context.Background(), confirmQ("yes"))
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+secret {
		t.Errorf("requests %d; want one with the file's key, trimmed", len(reqs))
	}
	// TYPESAFE_API_KEY wins over the file.
	j, err = client.NewJev(client.Config{URL: srv.URL, Model: model, Getenv: env{client.EnvKey: "other", client.EnvKeyFile: file}.get})
	if err != nil {
		t.Fatal(err)
	}
	j.Ask(context.Background(), confirmQ("no"))
	if reqs := srv.Requests(); reqs[len(reqs)-1].Header.Get("Authorization") != "Bearer other" {
		t.Errorf("TYPESAFE_API_KEY did not win over the file")
	}

	empty := filepath.Join(dir, "empty")
	spaced := filepath.Join(dir, "spaced")
	os.WriteFile(empty, []byte("\n"), 0o600)
	os.WriteFile(spaced, []byte(secret+" "+secret), 0o600)
	for _, tc := range []struct {
		env  env
		want string
	}{
		{env{client.EnvKeyFile: filepath.Join(dir, "missing")}, "reading TYPESAFE_API_KEY_FILE: open " + filepath.Join(dir, "missing")},
		{env{client.EnvKeyFile: empty}, "reading TYPESAFE_API_KEY_FILE (" + empty + "): the file is empty"},
		{env{client.EnvKeyFile: spaced}, "reading TYPESAFE_API_KEY_FILE (" + spaced + "): the key holds a blank or a control character"},
		{env{client.EnvKey: "a\nb" + secret}, "reading TYPESAFE_API_KEY: the key holds a blank"},
	} {
		_, err := client.NewJev(client.Config{URL: srv.URL, Model: model, Getenv: tc.env.get})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("NewJev with %v: %v, want %q", tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error %q holds the key", err)
		}
	}
}

// TestSecretNowhere puts jev through answers and failures, one of them a
// server that quotes the key back, and looks for the key in every reason,
// warning, printed value and file.
func TestSecretNowhere(t *testing.T) {
	s := newSetup(t)
	s.srv.Push(
		oracletest.WithLogprobs(0.9),
		oracletest.Response{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + secret + `"}}`},
		oracletest.Response{Status: 400, Body: `{"error":{"message":"bad key ` + secret + `"}}`},
		oracletest.Response{Status: 500, Body: secret}, oracletest.Response{Status: 500, Body: secret}, oracletest.Response{Status: 500, Body: secret},
		oracletest.Response{Text: "Perhaps " + secret},
	)
	var texts []string
	var answers []oracle.Answer
	for i := range 5 {
		a := s.jev.Ask(context.Background(), confirmQ(fmt.Sprintf("yes %d", i)))
		answers = append(answers, a)
		texts = append(texts, a.Reason, fmt.Sprintf("%v %+v %#v", a, a, a))
	}
	if !answers[0].Answered || answers[1].Why != oracle.Failed || answers[3].Why != oracle.Failed || answers[4].Why != oracle.Failed {
		t.Errorf("answers %+v, want one answer and four failures", answers)
	}
	if got := answers[2]; got.Why != oracle.Failed || !strings.Contains(got.Reason, "bad key <redacted>") {
		t.Errorf("the 400's reason %q, want its message with the key cut out", got.Reason)
	}
	texts = append(texts, fmt.Sprintf("%v %+v %#v %s", s.jev, s.jev, s.jev, s.jev.Unavailable()))
	texts = append(texts, s.warns.all()...)
	if n := noSecretIn(t, s.dir); n != 1 {
		t.Errorf("the cache holds %d files, want the one answer", n)
	}
	for _, x := range texts {
		if strings.Contains(x, secret) {
			t.Errorf("the key is in %q", x)
		}
	}
}

// noSecretIn fails when a file under dir holds the key, and returns how
// many files it read.
func noSecretIn(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
		} else if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
	return n
}

func TestReplay(t *testing.T) {
	s := newSetup(t)
	s.srv.Push(oracletest.WithLogprobs(0.25))
	q := confirmQ("sure")
	live := s.jev.Ask(context.Background(), q)

	r := client.NewReplay(model, s.cache)
	if a := r.Ask(context.Background(), q); !a.Answered || !a.Cached || !near(a.PYes, 0.25) || a.Key != live.Key {
		t.Errorf("replay %+v, want the cached 0.25 under %s", a, live.Key)
	}
	if a := r.Ask(context.Background(), confirmQ("sure!")); a.Answered || a.Why != oracle.Miss || !strings.Contains(a.Reason, s.dir) {
		t.Errorf("another question: %+v, want a miss naming the cache", a)
	}
	if a := client.NewReplay("another-model", s.cache).Ask(context.Background(), q); a.Answered || a.Why != oracle.Miss {
		t.Errorf("another model: %+v, want a miss", a)
	}
	if a := client.NewReplay(model, nil).Ask(context.Background(), q); a.Answered || a.Why != oracle.Miss || a.Key != live.Key {
		t.Errorf("no cache: %+v, want a miss with the key", a)
	}
	if n := len(s.srv.Requests()); n != 1 {
		t.Errorf("the server got %d requests, want only jev's", n)
	}
}

func TestNew(t *testing.T) {
	cache, err := client.OpenCache(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[client.Mode]string{
		"": "*client.Jev", client.ModeJev: "*client.Jev", client.ModeReplay: "*client.Replay", client.ModeMock: "*client.Mock",
	} {
		o, err := client.New(client.Config{Mode: mode, Model: model, Cache: cache, Getenv: env{}.get})
		if err != nil || fmt.Sprintf("%T", o) != want {
			t.Errorf("New(%q) = %T, %v; want %s", mode, o, err, want)
		}
	}
	if _, err := client.New(client.Config{Mode: "gpt"}); err == nil || err.Error() != `unknown oracle "gpt": want jev, replay or mock` {
		t.Errorf("New(gpt): %v", err)
	}
	for _, s := range []string{"jev", "replay", "mock"} {
		if m, err := client.ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := client.ParseMode("Jev"); err == nil {
		t.Error("ParseMode(Jev): no error")
	}
}

func TestCacheSharedByTwoOracles(t *testing.T) {
	s := newSetup(t)
	s.srv.Push(oracletest.WithLogprobs(0.6))
	if a := s.jev.Ask(context.Background(), confirmQ("ok")); !a.Answered || a.Cached {
		t.Fatalf("first: %+v", a)
	}
	// Another process's oracle: its own Cache value over the same directory.
	cache2, err := client.OpenCache(s.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	j2, err := client.NewJev(client.Config{URL: s.srv.URL, Model: model, Cache: cache2, Getenv: env{client.EnvKey: secret}.get})
	if err != nil {
		t.Fatal(err)
	}
	if a := j2.Ask(context.Background(), confirmQ("ok")); !a.Answered || !a.Cached || !near(a.PYes, 0.6) {
		t.Errorf("second oracle: %+v, want the first one's 0.6 from the cache", a)
	}
	if n := len(s.srv.Requests()); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
}

func TestCorruptEntry(t *testing.T) {
	q := confirmQ("yes")
	key := oracle.Key(model, q)
	good := func(s *setup) []byte {
		s.srv.Push(oracletest.WithLogprobs(0.5))
		s.jev.Ask(context.Background(), q)
		b, err := os.ReadFile(entryPath(s.dir, key))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		corrupt func([]byte) []byte
		warning string
	}{
		{"not JSON", func([]byte) []byte { return []byte("\x00\x01garbage") }, "not a JSON object"},
		{"torn", func(b []byte) []byte { return b[:len(b)/2] }, "not a JSON object"},
		{"empty", func([]byte) []byte { return nil }, "not a JSON object"},
		{"p_yes out of range", func(b []byte) []byte { return bytes.Replace(b, []byte(`"p_yes":0.5`), []byte(`"p_yes":1.5`), 1) },
			"p_yes: want a number from 0 to 1, got 1.5"},
		{"p_yes a string", func(b []byte) []byte { return bytes.Replace(b, []byte(`"p_yes":0.5`), []byte(`"p_yes":"0.5"`), 1) },
			"p_yes: want a number"},
		{"another key", func(b []byte) []byte { return bytes.Replace(b, []byte(key), []byte(strings.Repeat("0", 64)), 1) },
			"key: the entry is"},
		{"a newer format", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"hoist_oracle_cache":1`), []byte(`"hoist_oracle_cache":2`), 1)
		}, "hoist_oracle_cache: version 2, want 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t)
			b := good(s)
			if err := os.WriteFile(entryPath(s.dir, key), tc.corrupt(b), 0o600); err != nil {
				t.Fatal(err)
			}
			s.srv.Push(oracletest.WithLogprobs(0.3))
			a := s.jev.Ask(context.Background(), q)
			if !a.Answered || a.Cached || !near(a.PYes, 0.3) {
				t.Errorf("answer %+v, want a fresh 0.3 (the entry read as a miss)", a)
			}
			warns := s.warns.all()
			if len(warns) != 1 || !strings.Contains(warns[0], entryPath(s.dir, key)) || !strings.Contains(warns[0], tc.warning) {
				t.Errorf("warnings %q, want one naming the entry: %s", warns, tc.warning)
			}
			// The fresh answer replaced the entry.
			if e, ok := s.cache.Get(key); !ok || !near(e.PYes, 0.3) {
				t.Errorf("the entry after: %+v, %v", e, ok)
			}
		})
	}
	t.Run("warned once", func(t *testing.T) {
		s := newSetup(t)
		path := entryPath(s.dir, key)
		os.MkdirAll(filepath.Dir(path), 0o700)
		os.WriteFile(path, []byte("{"), 0o600)
		r := client.NewReplay(model, s.cache)
		for range 3 {
			if a := r.Ask(context.Background(), q); a.Why != oracle.Miss {
				t.Errorf("answer %+v, want a miss", a)
			}
		}
		if n := len(s.warns.all()); n != 1 {
			t.Errorf("%d warnings, want 1", n)
		}
	})
}

func entryPath(dir, key string) string { return filepath.Join(dir, key[:2], key+".json") }
