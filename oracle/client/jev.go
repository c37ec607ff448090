package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/oracle"
)

// The environment variables jev reads.
const (
	EnvKey     = "TYPESAFE_API_KEY"      // the key itself
	EnvKeyFile = "TYPESAFE_API_KEY_FILE" // a file that holds it, when EnvKey is unset
	EnvURL     = "HOIST_ORACLE_URL"      // the base URL, when Config.URL is ""
)

// maxAnswer bounds the model server's answer: a yes/no answer is a few
// hundred bytes, and a server must not make the proxy hold more.
const maxAnswer = 1 << 20

// Jev asks the System-One model (--oracle jev) over the OpenAI-compatible
// chat-completions protocol, through the cache: an answer the cache holds
// is not asked again, and each answer the model gives is cached. Each
// request has its own timeout; a 429 or 5xx is tried again after a backoff
// (or the server's Retry-After), a bounded number of times.
type Jev struct {
	endpoint string // the chat-completions URL
	model    string
	// key is a pointer so that printing a Jev with %v or %+v prints an
	// address, never the key.
	key         *apiKey
	unavailable string
	cache       *Cache
	client      *http.Client
	timeout     time.Duration
	retries     int
	maxWait     time.Duration
	clock       Clock
	warn        func(string)
}

var _ oracle.Oracle = (*Jev)(nil)

// apiKey holds the key; its String never shows it.
type apiKey struct{ value string }

func (k *apiKey) String() string { return "<redacted>" }

// NewJev builds the jev oracle from cfg (see New for what is an error).
// The key is read here, once: from TYPESAFE_API_KEY, else from the file
// TYPESAFE_API_KEY_FILE names.
func NewJev(cfg Config) (*Jev, error) {
	j := &Jev{
		model:   cfg.Model,
		cache:   cfg.Cache,
		timeout: cfg.Timeout,
		retries: cfg.Retries,
		maxWait: cfg.MaxWait,
		clock:   cfg.Clock,
		warn:    cfg.Warn,
	}
	if j.timeout <= 0 {
		j.timeout = oracle.DefaultTimeout
	}
	switch {
	case j.retries == 0:
		j.retries = DefaultRetries
	case j.retries < 0:
		j.retries = 0
	}
	if j.maxWait <= 0 {
		j.maxWait = DefaultMaxWait
	}
	if j.clock == nil {
		j.clock = realClock{}
	}
	if j.warn == nil {
		j.warn = func(string) {}
	}
	client := http.Client{}
	if cfg.Client != nil {
		client = *cfg.Client
	}
	// A redirect would carry the request, and the key, to an address the
	// user did not name.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	j.client = &client

	raw := cfg.URL
	source := "--oracle-url"
	if raw == "" {
		raw, source = cfg.getenv(EnvURL), EnvURL
	}
	if raw != "" {
		ep, err := endpoint(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		j.endpoint = ep
	}
	key, err := readKey(cfg.getenv)
	if err != nil {
		return nil, err
	}
	if key != "" {
		j.key = &apiKey{key}
	}
	switch {
	case j.key == nil:
		j.unavailable = "no key: set " + EnvKey + " or " + EnvKeyFile
	case j.endpoint == "":
		j.unavailable = "no model server: set --oracle-url or " + EnvURL
	case j.model == "":
		j.unavailable = "no model name: set --oracle-model"
	}
	return j, nil
}

var errRedirect = errors.New("the model server redirected the request; give --oracle-url the address it redirects to")

// endpoint checks a base URL and returns its chat-completions URL.
func endpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, password and all.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("reading the URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", errors.New("want an http or https URL with a host, such as http://127.0.0.1:8000/v1")
	}
	if u.User != nil {
		return "", fmt.Errorf("a user or password in the URL is not accepted: the key comes from %s or %s", EnvKey, EnvKeyFile)
	}
	u.Fragment = ""
	if !strings.HasSuffix(u.Path, "/chat/completions") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/chat/completions"
		u.RawPath = ""
	}
	return u.String(), nil
}

// readKey reads the key from the environment: TYPESAFE_API_KEY, else the
// file TYPESAFE_API_KEY_FILE names, its surrounding blanks trimmed. An
// error names the variable and the file, never the key.
func readKey(getenv func(string) string) (string, error) {
	key, from := getenv(EnvKey), EnvKey
	if key == "" {
		path := getenv(EnvKeyFile)
		if path == "" {
			return "", nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", EnvKeyFile, err)
		}
		key, from = strings.TrimSpace(string(b)), EnvKeyFile+" ("+path+")"
		if key == "" {
			return "", fmt.Errorf("reading %s: the file is empty", from)
		}
	}
	for _, r := range key {
		if r <= ' ' || r == 0x7f {
			return "", fmt.Errorf("reading %s: the key holds a blank or a control character", from)
		}
	}
	return key, nil
}

// Unavailable says why jev cannot ask the model (no key, no URL, no model
// name), or "" when it can. Questions are still answered from the cache.
func (j *Jev) Unavailable() string { return j.unavailable }

// Key returns q's cache key (oracle.Key with jev's model).
func (j *Jev) Key(q oracle.Question) string { return oracle.Key(j.model, q) }

// Ask answers q from the cache, else asks the model and caches its answer.
func (j *Jev) Ask(ctx context.Context, q oracle.Question) oracle.Answer {
	key, a, done := settled(j.model, j.cache, q)
	if done {
		return a
	}
	if j.unavailable != "" {
		return noAnswer(key, oracle.Unset, "%s", j.unavailable)
	}
	r, a := j.ask(ctx, key, oracle.RequestBody(j.model, q))
	if !a.Answered {
		return a
	}
	e := Entry{Key: key, Model: j.model, Prompt: q.Version, PYes: r.P, From: r.From, Word: r.Word, Created: j.clock.Now()}
	if err := j.cache.Put(e); err != nil {
		j.warn("keeping the model's answer: " + err.Error())
	}
	return a
}

// ask posts the request, trying again after a 429 or 5xx.
func (j *Jev) ask(ctx context.Context, key string, body []byte) (oracle.Reading, oracle.Answer) {
	for try := 0; ; try++ {
		status, header, answer, err := j.post(ctx, body)
		switch {
		case err != nil && ctx.Err() != nil:
			return oracle.Reading{}, noAnswer(key, oracle.Canceled, "the question was withdrawn: %v", ctx.Err())
		case errors.Is(err, errTimeout):
			return oracle.Reading{}, noAnswer(key, oracle.Failed, "the model server did not answer within %s", j.timeout)
		case err != nil:
			return oracle.Reading{}, noAnswer(key, oracle.Failed, "asking the model: %v", err)
		case status == http.StatusOK:
			r, err := oracle.ReadAnswer(answer)
			if err != nil {
				return oracle.Reading{}, noAnswer(key, oracle.Failed, "reading the model's answer: %v", err)
			}
			return r, oracle.Answer{Key: key, Answered: true, PYes: r.P, From: r.From}
		case status != http.StatusTooManyRequests && status < 500:
			return oracle.Reading{}, noAnswer(key, oracle.Failed, "%s", j.refusal(status, answer))
		case try >= j.retries:
			return oracle.Reading{}, noAnswer(key, oracle.Failed, "the model server answered %s, %d times", statusText(status), try+1)
		}
		wait := backoff(try)
		if ra, ok := retryAfter(header.Get("Retry-After"), j.clock.Now()); ok {
			wait = ra
		}
		if wait > j.maxWait {
			return oracle.Reading{}, noAnswer(key, oracle.Failed, "the model server answered %s and asked to wait %s, longer than %s", statusText(status), wait, j.maxWait)
		}
		select {
		case <-j.clock.After(wait):
		case <-ctx.Done():
			return oracle.Reading{}, noAnswer(key, oracle.Canceled, "the question was withdrawn: %v", ctx.Err())
		}
	}
}

var errTimeout = errors.New("timed out")

// post sends one request, within the timeout, and reads the answer.
func (j *Jev) post(ctx context.Context, body []byte) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		select {
		case <-j.clock.After(j.timeout):
			cancel(errTimeout)
		case <-done:
		}
	})
	defer func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("making the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+j.key.value)
	resp, err := j.client.Do(req)
	if err != nil {
		return 0, nil, nil, j.transportError(ctx, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return 0, nil, nil, j.transportError(ctx, err)
	}
	if len(answer) > maxAnswer {
		return 0, nil, nil, fmt.Errorf("the model server's answer is larger than %d bytes", maxAnswer)
	}
	return resp.StatusCode, resp.Header, answer, nil
}

// transportError words an error of the request without its URL (which
// url.Error carries, and which may hold a query the user put there).
func (j *Jev) transportError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return errTimeout
	}
	if errors.Is(err, errRedirect) {
		return errRedirect
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err
}

// refusal words a 4xx answer other than 429. The server's own message
// helps (an unknown model, a bad parameter), except for 401 and 403,
// whose messages can quote the key; any copy of the key is cut out
// anyway, and the message clipped.
func (j *Jev) refusal(status int, answer []byte) string {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return fmt.Sprintf("the model server refused the key (%s)", statusText(status))
	}
	msg := oracle.ServerMessage(answer)
	if msg == "" {
		return fmt.Sprintf("the model server answered %s", statusText(status))
	}
	if j.key != nil {
		msg = strings.ReplaceAll(msg, j.key.value, "<redacted>")
	}
	return fmt.Sprintf("the model server answered %s: %s", statusText(status), oracle.Clip(msg, 200))
}

func statusText(status int) string {
	return strconv.Itoa(status) + " " + http.StatusText(status)
}

// backoff is the wait before the try after try (0-based): half a second,
// doubling.
func backoff(try int) time.Duration {
	return 500 * time.Millisecond << min(try, 10)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Clock is the time jev waits by: the real clock, or a test's, so that a
// test of a timeout or a backoff waits for nothing.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
