package flow

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/oracle"
)

// Oracle is what a session asks the flow's questions (oracle.Lookup): the
// System-One model, through its cache, or the replay or the mock of it
// (--oracle). It is safe for concurrent use, as every oracle.Oracle is.
type Oracle = oracle.Oracle

// asker asks one session's flow questions: within the session's budget
// (--flow-questions, oracle.Limit), each question once (an answer is kept
// by its key, so a lookup offered again at a later site of the same
// exchange costs nothing), and each decision's questions at once, bounded
// together by the oracle's timeout, so that a decision never waits for the
// network longer than that (manual, "--flow-questions").
type asker struct {
	o       *oracle.Limited
	n       int // the budget o was given
	ctx     context.Context
	timeout time.Duration
	always  bool // ask whatever the decider and the arbiter (learn's fit)
	memo    map[string]oracle.Answer
	// The conversation's last exchange (oracle.LastExchange), kept as it
	// is heard: the agent's last words, and the customer's last message
	// with the agent's last words before it.
	last string
	x    oracle.Exchange
}

func newAsker(opt Options) *asker {
	if opt.Oracle == nil {
		return nil
	}
	a := &asker{o: oracle.Limit(opt.Oracle, opt.Caps.Questions), n: opt.Caps.Questions, ctx: opt.Context, timeout: opt.OracleTimeout,
		always: opt.AskAlways, memo: map[string]oracle.Answer{}}
	if a.ctx == nil {
		a.ctx = context.Background()
	}
	if a.timeout <= 0 {
		a.timeout = oracle.DefaultTimeout
	}
	return a
}

// hear keeps the last exchange up to date with one line of the
// conversation, as oracle.LastExchange would find it.
func (a *asker) hear(role, text string) {
	switch role {
	case "user":
		a.x = oracle.Exchange{Said: a.last, Reply: text}
	case "assistant":
		if strings.TrimSpace(text) != "" {
			a.last = text
		}
	}
}

// OracleWeight returns the weight the arbiter gives the System-One model's
// answer when serving fold f, 0 when it has none: a flow whose arbiter was
// fitted without an oracle asks no question.
func (a *Arbiter) OracleWeight(f int) float64 {
	i := slices.Index(a.Features, FeatureOracle)
	if i < 0 {
		return 0
	}
	return a.weights(f)[i]
}

// Asks reports whether the session puts the flow's questions to an oracle:
// it has one, and the arbiter decides and weighs its answers (or the
// session asks for every offer, as learn's fit does).
func (s *Session) Asks() bool {
	if s.ask == nil {
		return false
	}
	if s.ask.always {
		return true
	}
	return s.opt.Rule.Decider == ArbiterDecider && s.f.Arbiter != nil && s.f.Arbiter.OracleWeight(s.fold) != 0
}

// Questions returns how many questions the session has put to its oracle,
// answered from the cache or not: what --flow-questions bounds.
func (s *Session) Questions() int {
	if s.ask == nil {
		return 0
	}
	return s.ask.o.Asked()
}

// askOracle asks the flow's question about each offer of out made at the
// site of call i, logs each question's key and answer in its offer, and
// scores the offer again with the answer. An offer the session has asked
// for since the last write is not asked about: it is never offered.
func (s *Session) askOracle(i int, out []Offer) {
	if len(out) == 0 || !s.Asks() {
		return
	}
	a := s.ask
	after := oracle.Call{Tool: s.CallName(s.callTool[i]), Arguments: []byte(s.callArgs[i])}
	keys := make([]string, len(out)) // each offer's question, "" for none
	var todo []oracle.Question
	var todoKeys []string
	for j := range out {
		o := &out[j]
		if s.asked[o.Label()] {
			continue
		}
		q := oracle.Lookup(a.x, after, oracle.Call{Tool: s.CallName(o.Tool), Arguments: o.Args})
		key := a.o.Key(q)
		keys[j] = key
		if _, ok := a.memo[key]; !ok && !slices.Contains(todoKeys, key) {
			todo = append(todo, q)
			todoKeys = append(todoKeys, key)
		}
	}
	got := map[string]oracle.Answer{}
	if len(todo) > 0 {
		answers := make([]oracle.Answer, len(todo))
		ctx, cancel := context.WithTimeout(a.ctx, a.timeout)
		// The budget goes to the questions in the order of the offers,
		// so a replay spends it as the session did: those within it are
		// asked at once, the rest are told it is spent.
		room := min(len(todo), max(a.n-a.o.Asked(), 0))
		if room == 1 {
			answers[0] = a.o.Ask(ctx, todo[0])
		} else if room > 1 {
			var wg sync.WaitGroup
			for k := range todo[:room] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answers[k] = a.o.Ask(ctx, todo[k])
				}()
			}
			wg.Wait()
		}
		for k := room; k < len(todo); k++ {
			answers[k] = a.o.Ask(ctx, todo[k])
		}
		cancel()
		for k, ans := range answers {
			if ans.Key == "" {
				ans.Key = todoKeys[k]
			}
			if ans.Why == oracle.Canceled && a.ctx.Err() == nil {
				// The decision's own deadline, not the caller's end: the
				// model took longer than the oracle's timeout.
				ans.Why, ans.Reason = oracle.Failed, "no answer within the oracle's timeout"
			}
			got[todoKeys[k]] = ans
			if ans.Answered || ans.Why != oracle.Canceled && ans.Why != oracle.Failed {
				// An answer, or a reason that stands (a miss, the budget
				// spent): kept. A failure or a timeout may be asked again.
				a.memo[todoKeys[k]] = ans
			}
		}
	}
	for j, key := range keys {
		if key == "" {
			continue
		}
		ans, ok := got[key]
		if !ok {
			ans = a.memo[key]
		}
		setAnswer(&out[j], ans)
	}
	if ar := s.f.Arbiter; ar != nil {
		for j := range out {
			if out[j].OracleKey != "" {
				out[j].PArbiter = ar.P(InputsOf(&out[j]), s.fold)
			}
		}
	}
}

// setAnswer logs an answer in its offer.
func setAnswer(o *Offer, ans oracle.Answer) {
	o.OracleKey = ans.Key
	o.POracle, o.OracleCached, o.OracleWhy = nil, false, ""
	if ans.Answered {
		p := ans.PYes
		o.POracle = &p
		o.OracleCached = ans.Cached
		return
	}
	o.OracleWhy = string(ans.Why)
}

// oracleInput is an offer's "oracle" input: the logged answer, NaN when
// there is none.
func oracleInput(o *Offer) float64 {
	if o.POracle == nil || math.IsNaN(*o.POracle) {
		return math.NaN()
	}
	return *o.POracle
}

// Reanswer gives a logged decision's offers the answers cache holds for
// the questions they name (their OracleKey), and scores them again with
// f's arbiter served to fold: hoist promote --oracle-cache re-decides
// shadow runs so, from the answers cached since (a question the live
// session could not get answered, or answered otherwise). An offer whose
// question the cache does not hold keeps what was logged. It returns how
// many offers got another answer.
func (f *Flow) Reanswer(d *Decision, fold int, cache *oracle.Cache) int {
	n := 0
	for i := range d.Offers {
		o := &d.Offers[i]
		if o.OracleKey == "" {
			continue
		}
		e, ok := cache.Get(o.OracleKey)
		if !ok || o.POracle != nil && *o.POracle == e.PYes {
			continue
		}
		setAnswer(o, oracle.Answer{Key: o.OracleKey, Answered: true, PYes: e.PYes, From: e.From, Cached: true})
		if f.Arbiter != nil {
			o.PArbiter = f.Arbiter.P(InputsOf(o), fold)
		}
		n++
	}
	return n
}
