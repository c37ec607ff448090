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
	// got holds the answers of the last questions asked, failures
	// included; later says the questions wait in due to be asked by the
	// caller (AskLater).
	got   map[string]oracle.Answer
	later bool
	due   Questions
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
		always: opt.AskAlways, memo: map[string]oracle.Answer{}, got: map[string]oracle.Answer{}}
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
// for since the last write is not asked about: it is never offered. A
// session that asks later (AskLater) only names the questions: they wait
// in Due, and the offers get their answers from Reanswered.
func (s *Session) askOracle(i int, out []Offer) {
	if len(out) == 0 || !s.Asks() {
		return
	}
	a := s.ask
	after := oracle.Call{Tool: s.CallName(s.callTool[i]), Arguments: []byte(s.callArgs[i])}
	keys := make([]string, len(out)) // each offer's question, "" for none
	var todo Questions
	for j := range out {
		o := &out[j]
		if s.asked[o.Label()] {
			continue
		}
		q := oracle.Lookup(a.x, after, oracle.Call{Tool: s.CallName(o.Tool), Arguments: o.Args})
		key := a.o.Key(q)
		keys[j] = key
		if _, ok := a.memo[key]; !ok && !slices.Contains(todo.keys, key) && !a.due.has(key) {
			todo.qs = append(todo.qs, q)
			todo.keys = append(todo.keys, key)
		}
	}
	if a.later {
		a.due.qs = append(a.due.qs, todo.qs...)
		a.due.keys = append(a.due.keys, todo.keys...)
		for j, key := range keys {
			if key != "" {
				out[j].OracleKey = key
			}
		}
		s.answerOffers(out)
		return
	}
	if len(todo.keys) > 0 {
		todo.o, todo.n, todo.timeout, todo.ctx = a.o, a.n, a.timeout, a.ctx
		s.remember(&todo, todo.Ask(a.ctx))
	}
	for j, key := range keys {
		if key == "" {
			continue
		}
		out[j].OracleKey = key
	}
	s.answerOffers(out)
}

// Questions are questions a session named and has not had answered: its
// oracle's, its budget and its timeout go with them, so that they can be
// asked on any goroutine (Ask), while the session goes on.
type Questions struct {
	qs      []oracle.Question
	keys    []string
	o       *oracle.Limited
	n       int
	timeout time.Duration
	ctx     context.Context // the session's own (Options.Context)
}

func (q *Questions) has(key string) bool { return slices.Contains(q.keys, key) }

// Len returns how many questions there are.
func (q *Questions) Len() int {
	if q == nil {
		return 0
	}
	return len(q.keys)
}

// Ask asks the questions at once, and waits at most the oracle's timeout
// for them together, or until ctx is done. The budget goes to the
// questions in the order they were named, so a replay spends it as the
// session did: those within it are asked at once, the rest are told it is
// spent. It touches no session state: it is safe to call off the session's
// goroutine, and its answers go to Session.Answered.
func (q *Questions) Ask(ctx context.Context) []oracle.Answer {
	answers := make([]oracle.Answer, len(q.qs))
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	room := min(len(q.qs), max(q.n-q.o.Asked(), 0))
	if room == 1 {
		answers[0] = q.o.Ask(ctx, q.qs[0])
	} else if room > 1 {
		var wg sync.WaitGroup
		for k := range q.qs[:room] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[k] = q.o.Ask(ctx, q.qs[k])
			}()
		}
		wg.Wait()
	}
	for k := room; k < len(q.qs); k++ {
		answers[k] = q.o.Ask(ctx, q.qs[k])
	}
	return answers
}

// AskLater makes the session name its questions instead of asking them:
// a decision's offers wait for their answers in Due, which the caller asks
// off the session's goroutine (Questions.Ask) and hands back to Answered,
// then Run.Reanswered. The proxy does so, so that no line waits on the
// model but the answer the decision is about (issue 23, point 4).
func (s *Session) AskLater() {
	if s.ask != nil {
		s.ask.later = true
	}
}

// Due returns the questions named since the last Due, nil when none.
func (s *Session) Due() *Questions {
	if s.ask == nil || len(s.ask.due.keys) == 0 {
		return nil
	}
	q := s.ask.due
	s.ask.due = Questions{}
	q.o, q.n, q.timeout, q.ctx = s.ask.o, s.ask.n, s.ask.timeout, s.ask.ctx
	return &q
}

// Answered takes the answers to questions from Due, asked so (or nil, for
// none asked: the caller stopped waiting).
func (s *Session) Answered(q *Questions, answers []oracle.Answer) {
	if q == nil || s.ask == nil {
		return
	}
	if answers == nil {
		answers = make([]oracle.Answer, len(q.keys))
		for k := range answers {
			answers[k] = oracle.Answer{Why: oracle.Canceled, Reason: "the proxy stopped waiting"}
		}
	}
	s.remember(q, answers)
}

// remember keeps the answers to q by their keys: each answer, or a reason
// that stands (a miss, the budget spent), for good; a failure or a timeout
// only for the offers of this decision, since it may be asked again.
func (s *Session) remember(q *Questions, answers []oracle.Answer) {
	a := s.ask
	clear(a.got)
	for k, ans := range answers {
		if ans.Key == "" {
			ans.Key = q.keys[k]
		}
		if ans.Why == oracle.Canceled && (q.ctx == nil || q.ctx.Err() == nil) {
			// The decision's own deadline, not the caller's end: the
			// model took longer than the oracle's timeout.
			ans.Why, ans.Reason = oracle.Failed, "no answer within the oracle's timeout"
		}
		a.got[q.keys[k]] = ans
		if ans.Answered || ans.Why != oracle.Canceled && ans.Why != oracle.Failed {
			a.memo[q.keys[k]] = ans
		}
	}
}

// Reanswered gives the run's offers the answers Session.Answered took, and
// scores them again.
func (r *Run) Reanswered() { r.s.answerOffers(r.offers) }

// answerOffers gives each offer that names a question its answer, the last
// decision's or a kept one, and scores it again with it. An offer whose
// question has none yet keeps its key and no answer.
func (s *Session) answerOffers(out []Offer) {
	a := s.ask
	for j := range out {
		key := out[j].OracleKey
		if key == "" {
			continue
		}
		ans, ok := a.got[key]
		if !ok {
			ans, ok = a.memo[key]
		}
		if !ok {
			continue
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
func (f *Flow) Reanswer(d *Decision, fold int, cache oracle.Answers) int {
	n := 0
	for i := range d.Offers {
		o := &d.Offers[i]
		if o.OracleKey == "" {
			continue
		}
		a, ok := cache.Answer(o.OracleKey)
		if !ok || o.POracle != nil && *o.POracle == a.PYes {
			continue
		}
		setAnswer(o, a)
		if f.Arbiter != nil {
			o.PArbiter = f.Arbiter.P(InputsOf(o), fold)
		}
		n++
	}
	return n
}
