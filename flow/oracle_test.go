package flow

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/internal/oracletest"
	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// oracleFlow is shopFlow with an arbiter that reads only the System-One
// model's answer: P(hit) = σ(logit P(yes)), P(yes) itself within the
// logit's clip, and σ(0) = 0.5 without an answer.
func oracleFlow(t *testing.T, w float64) *Flow {
	t.Helper()
	f := shopFlow(t)
	f.Arbiter = &Arbiter{Features: []string{FeatureBias, FeatureOracle}, Weights: []float64{0, w}}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

// atGetUser serves the flow at the agent's get_user, whose result lists
// orders #a and #b (a fan-out: one question per order) and item i1, after the customer
// named #b, and returns the first decision.
func atGetUser(t *testing.T, s *Session) Decision {
	t.Helper()
	s.Message("assistant", "Which order is it about?")
	s.Message("user", "It's order #b, please.")
	i := s.Call("get_user", json.RawMessage(`{"x":"user_7"}`))
	s.Result(i, userText, false)
	return s.Run(i).Next()
}

func offerFor(t *testing.T, d Decision, label string) Offer {
	t.Helper()
	for _, o := range d.Offers {
		if o.Label() == label {
			return o
		}
	}
	t.Fatalf("no offer %s in %+v", label, d.Offers)
	return Offer{}
}

func TestOracleJoinsArbiter(t *testing.T) {
	mock := client.NewMock("jev-test")
	s, err := NewSession(oracleFlow(t, 1), Options{Rule: Rule{Threshold: 0.6}, Oracle: mock})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Asks() {
		t.Fatal("a session with an oracle and an arbiter weighing it asks nothing")
	}
	d := atGetUser(t, s)
	named := offerFor(t, d, `get_order {"x":"#b"}`)
	other := offerFor(t, d, `get_order {"x":"#a"}`)
	// The mock: yes when a lookup's value is in the conversation, else
	// unsure.
	if named.POracle == nil || *named.POracle != client.MockYes || other.POracle == nil || *other.POracle != client.MockUnsure {
		t.Fatalf("answers: named %v, other %v; want %v and %v", named.POracle, other.POracle, client.MockYes, client.MockUnsure)
	}
	if math.Abs(named.PArbiter-client.MockYes) > 1e-9 || math.Abs(other.PArbiter-0.5) > 1e-9 {
		t.Errorf("arbiter: named %v, other %v; want the answers themselves", named.PArbiter, other.PArbiter)
	}
	// The key logged is the question's: the one hoist-mcp's cache names.
	q := oracle.Lookup(oracle.Exchange{Said: "Which order is it about?", Reply: "It's order #b, please."},
		oracle.Call{Tool: "get_user", Arguments: []byte(`{"x":"user_7"}`)},
		oracle.Call{Tool: "get_order", Arguments: []byte(`{"x":"#b"}`)})
	if named.OracleKey != mock.Key(q) || other.OracleKey == named.OracleKey {
		t.Errorf("keys: named %q, other %q; want %q and another", named.OracleKey, other.OracleKey, mock.Key(q))
	}
	// Threshold 0.6: only the named order is taken.
	if d.Taken < 0 || d.Offers[d.Taken].Label() != named.Label() {
		t.Errorf("took %s, want %s", d.Value(), named.Label())
	}
	// A logged offer scores again as it was served.
	if got := s.f.Arbiter.P(InputsOf(&named), s.fold); got != named.PArbiter {
		t.Errorf("rescored %v, served %v", got, named.PArbiter)
	}
	if s.Questions() != 3 {
		t.Errorf("%d questions, want 3 (one per order, and get_item's)", s.Questions())
	}
}

func TestOracleBudget(t *testing.T) {
	s, _ := NewSession(oracleFlow(t, 1), Options{Rule: Rule{Threshold: 0.6}, Caps: Caps{PerCall: 8, PerSession: 40, Questions: 1}, Oracle: client.NewMock("m")})
	d := atGetUser(t, s)
	var answered, spent int
	for i, o := range d.Offers {
		if o.POracle != nil && i != 0 {
			t.Errorf("the budget went to offer %d, want the first", i)
		}
		switch {
		case o.POracle != nil:
			answered++
		case o.OracleWhy == string(oracle.Spent) && o.OracleKey != "":
			spent++
			if o.PArbiter != 0.5 {
				t.Errorf("an offer without an answer scores %v, want σ(0)", o.PArbiter)
			}
		}
	}
	if answered != 1 || spent != 2 || s.Questions() != 1 {
		t.Errorf("--flow-questions 1 of 3 offers: %d answered, %d spent, %d asked; want 1, 2, 1", answered, spent, s.Questions())
	}
}

func TestOracleAskedOnlyWhenWeighed(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *Flow
		rule Rule
	}{
		{"no weight", oracleFlow(t, 0), Rule{Threshold: 0.3}},
		{"reach decides", oracleFlow(t, 1), Rule{Decider: Reach, Threshold: 0.3}},
		{"no oracle feature", func() *Flow {
			f := shopFlow(t)
			f.Arbiter = &Arbiter{Features: []string{FeatureBias}, Weights: []float64{1}}
			return f
		}(), Rule{Threshold: 0.3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewSession(tc.f, Options{Rule: tc.rule, Oracle: client.NewMock("m")})
			d := atGetUser(t, s)
			for _, o := range d.Offers {
				if o.OracleKey != "" || o.POracle != nil {
					t.Errorf("asked about %s: %+v", o.Label(), o)
				}
			}
			if s.Asks() || s.Questions() != 0 {
				t.Errorf("asks %v, %d questions", s.Asks(), s.Questions())
			}
		})
	}
}

func TestOracleReplayMissIsNoAnswer(t *testing.T) {
	cache, err := client.OpenCache(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSession(oracleFlow(t, 1), Options{Rule: Rule{Threshold: 0.3}, Oracle: client.NewReplay("m", cache)})
	d := atGetUser(t, s)
	for _, o := range d.Offers {
		if o.POracle != nil || o.OracleWhy != string(oracle.Miss) || o.PArbiter != 0.5 {
			t.Errorf("a replay miss: %+v", o)
		}
	}
}

// A decision logged with a replay miss is re-decided from an answer cached
// since: the offer gets it, and the arbiter's probability is the one a
// session given that answer serves.
func TestReanswerFromCache(t *testing.T) {
	dir := t.TempDir()
	cache, err := client.OpenCache(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := oracleFlow(t, 1)
	missed, _ := NewSession(f, Options{Rule: Rule{Threshold: 0.6}, Oracle: client.NewReplay("m", cache)})
	d := atGetUser(t, missed)
	if d.Taken >= 0 {
		t.Fatalf("with no answers, took %s", d.Value())
	}
	// The mock's answers, as if jev had given them since.
	mocked, _ := NewSession(f, Options{Rule: Rule{Threshold: 0.6}, Oracle: client.NewMock("m")})
	want := atGetUser(t, mocked)
	for _, o := range want.Offers {
		if err := cache.Put(client.Entry{Key: o.OracleKey, Model: "m", Prompt: oracle.VersionLookup, PYes: *o.POracle, From: oracle.FromMock}); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.Reanswer(&d, missed.Fold(), cache); n != len(d.Offers) {
		t.Errorf("reanswered %d of %d offers", n, len(d.Offers))
	}
	for i, o := range d.Offers {
		w := want.Offers[i]
		if o.POracle == nil || *o.POracle != *w.POracle || o.PArbiter != w.PArbiter || !o.OracleCached || o.OracleWhy != "" {
			t.Errorf("offer %d re-decided %+v, want the answer and score %+v", i, o, w)
		}
	}
	if g, _ := Propensities(Rule{Decider: ArbiterDecider, Threshold: 0.6}, d.Offers); g < 0 || d.Offers[g].Label() != `get_order {"x":"#b"}` {
		t.Errorf("re-decided greedy %d, want the named order", g)
	}
	if n := f.Reanswer(&d, missed.Fold(), cache); n != 0 {
		t.Errorf("a second pass changed %d offers", n)
	}
}

// A model that does not answer holds a decision no longer than the
// oracle's timeout: the decision is made without the answers, each
// logged as failed, and a later site may ask again.
func TestOracleTimeoutIsNoAnswer(t *testing.T) {
	srv := oracletest.Start(t)
	srv.Default(oracletest.Response{Hang: true})
	jev, err := client.New(client.Config{Mode: client.ModeJev, URL: srv.URL, Model: "m", Retries: -1,
		Getenv: func(name string) string {
			if name == "TYPESAFE_API_KEY" {
				return "sk-timeout-test"
			}
			return ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSession(oracleFlow(t, 1), Options{Rule: Rule{Threshold: 0.6}, Oracle: jev, OracleTimeout: time.Millisecond})
	d := atGetUser(t, s)
	if len(d.Offers) == 0 {
		t.Fatal("no offers")
	}
	for _, o := range d.Offers {
		if o.POracle != nil || o.OracleWhy != string(oracle.Failed) || o.PArbiter != 0.5 {
			t.Errorf("an offer whose question timed out: %+v", o)
		}
	}
	if len(s.ask.memo) != 0 {
		t.Errorf("a timed-out question was kept: %v", s.ask.memo)
	}
}
