package flow

import (
	"math"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
)

// cueFlow is shopFlow with get_item after get_user made 12 times in 40,
// and 12 times in the 20 where the customer had said "exchange", in
// tasksN distinct tasks (issue 26:
// a product looked up where the customer asked to exchange, not to
// return).
func cueFlow(t *testing.T, tasksN int) *Flow {
	t.Helper()
	f := shopFlow(t)
	f.Learned.Cues = true
	s := &f.Sites[len(f.Sites)-1]
	if s.Tool != "get_user" {
		t.Fatalf("last site %s", s.Tool)
	}
	s.Count = Count{N: 40}
	for i := range s.Lookups {
		l := &s.Lookups[i]
		switch l.Tool {
		case "get_item":
			l.Reach, l.Habit, l.Bindings[0].Matched = Count{N: 12}, Count{N: 12}, Count{N: 12}
			l.Cues = []Cue{{Word: "exchange", Said: Count{N: 20}, Reach: Count{N: 12}, Tasks: Count{N: tasksN}}}
		case "get_order":
			l.Reach, l.Habit = Count{N: 36}, Count{N: 36}
			for j := range l.Bindings {
				l.Bindings[j].Matched = Count{N: 36}
			}
		}
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestServeCues(t *testing.T) {
	offered := func(f *Flow, said string) (item, order bool) {
		s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}})
		if err != nil {
			t.Fatal(err)
		}
		s.Message("user", said)
		ds, _ := serve(t, s, answerShop)
		for _, d := range ds {
			for _, o := range d.Offers {
				item = item || o.Tool == "get_item"
				order = order || o.Tool == "get_order"
			}
		}
		return item, order
	}
	exchange, ret := "I want to exchange the lamp.", "I want to return the lamp."
	f := cueFlow(t, 20) // (12+½)/(20+1) = 0.6, 2 times the site's 0.3
	if item, order := offered(f, exchange); !item || !order {
		t.Errorf("exchange said: get_item offered %v, get_order %v; want both", item, order)
	}
	if item, order := offered(f, ret); item || !order {
		t.Errorf("no cue said: get_item offered %v, get_order %v; want get_order only", item, order)
	}
	// Learned without cues, the flow serves get_item whatever was said.
	f.Learned.Cues = false
	if item, _ := offered(f, ret); !item {
		t.Error("a flow not learned with cues gated by them")
	}
	// A cue said in fewer than CueMinTasks tasks of the served fold's
	// training part lifts nothing, however often it was said: no gate.
	if item, _ := offered(cueFlow(t, CueMinTasks-1), ret); !item {
		t.Errorf("a cue said in %d tasks gated the lookup", CueMinTasks-1)
	}
}

// A cue whose counts are out of range is refused, naming the field.
func TestCuesValidate(t *testing.T) {
	f := cueFlow(t, 20)
	s := &f.Sites[len(f.Sites)-1]
	for i := range s.Lookups {
		if s.Lookups[i].Tool == "get_item" {
			s.Lookups[i].Cues[0].Reach = Count{N: 13}
		}
	}
	err := f.Validate()
	if err == nil || !strings.Contains(err.Error(), "lookups[0].cues[0].reach.n: 13 out of range 0..12") {
		t.Errorf("Validate: %v", err)
	}
}

// A merge adds the counts of the cues both flows have and drops a cue
// only one has; flows learned with and without cues do not merge. The
// review names the cues that decide.
func TestMergeCues(t *testing.T) {
	a, b := cueFlow(t, 20), cueFlow(t, 20)
	item := func(f *Flow) *Lookup {
		s := &f.Sites[len(f.Sites)-1]
		for i := range s.Lookups {
			if s.Lookups[i].Tool == "get_item" {
				return &s.Lookups[i]
			}
		}
		t.Fatal("no get_item")
		return nil
	}
	for _, f := range []*Flow{a, b} {
		f.Learned.Digest = DigestPrefix + strings.Repeat("0", 64)
	}
	item(b).Cues = append(item(b).Cues, Cue{Word: "swap", Said: Count{N: 10}, Reach: Count{N: 5}})
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := item(m).Cues; len(got) != 1 || got[0].Word != "exchange" || got[0].Said.N != 40 || got[0].Reach.N != 24 {
		t.Errorf("merged cues %+v, want exchange said 40, reach 24", got)
	}
	if !m.Learned.Cues {
		t.Error("learned.cues lost in the merge")
	}
	if item(a).Cues[0].Said.N != 20 {
		t.Error("the merge changed its input")
	}
	var cues []string
	for _, s := range m.Review(Rule{Decider: Reach, Threshold: DefaultThreshold}, -1).Sites {
		for _, l := range s.Lookups {
			if l.Tool == "get_item" {
				cues = l.Cues
			}
		}
	}
	if len(cues) != 1 || cues[0] != "exchange" {
		t.Errorf("review cues %v, want [exchange]", cues)
	}
	b.Learned.Cues = false
	if _, err := Merge(a, b); err == nil || !strings.Contains(err.Error(), "learned.cues") {
		t.Errorf("merge of flows with and without cues: %v", err)
	}
}

// A cue the agent said (By "agent") is served from what the agent said
// since the customer's last message, in a flow learned with the agent's
// words: the same word said by the customer does not count, nor the
// agent's said before the customer's last message.
func TestServeAgentCues(t *testing.T) {
	f := cueFlow(t, 20)
	f.Learned.Cues, f.Learned.AgentWords = false, true
	var l *Lookup
	for i := range f.Sites[len(f.Sites)-1].Lookups {
		if x := &f.Sites[len(f.Sites)-1].Lookups[i]; x.Tool == "get_item" {
			l = x
		}
	}
	if l == nil {
		t.Fatal("no get_item lookup at the last site")
	}
	l.Cues[0].Word, l.Cues[0].By = "details", CueByAgent
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	offered := func(f *Flow, lines ...string) bool { return itemOffer(t, f, lines...) != nil }
	if !offered(f, "user", "My order, please.", "assistant", "Let me pull up the details.") {
		t.Error("the agent said details: get_item not offered")
	}
	if offered(f, "user", "The details of my order, please.", "assistant", "Let me look.") {
		t.Error("the customer said details, the agent did not: get_item offered")
	}
	if offered(f, "assistant", "Which details?", "user", "My order.", "assistant", "Let me look.") {
		t.Error("the agent said details before the customer's last message: get_item offered")
	}
	// A flow not learned with the agent's words does not hear the agent,
	// so a cue the agent said is refused there, naming the field.
	f.Learned.AgentWords, f.Learned.Cues = false, true
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "cues[0].by") || !strings.Contains(err.Error(), "learned.agent_words") {
		t.Errorf("Validate: %v, want an error naming cues[0].by and learned.agent_words", err)
	}
	f.Learned.AgentWords = true
	// A cue by anyone else is refused, naming the field.
	l.Cues[0].By = "customer"
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "cues[0].by") {
		t.Errorf("Validate: %v, want an error naming cues[0].by", err)
	}
}

// An agent said predicate is served from what the agent said since the
// customer's last message, in a flow learned with the agent's words: the
// offer's P(reach | when) is the held side's where the agent said the
// word, the other's where only the customer did; a flow learned without
// the agent's words is refused.
func TestServeAgentPredicate(t *testing.T) {
	f := cueFlow(t, 20)
	f.Learned.Cues, f.Learned.AgentWords = false, true
	s := &f.Sites[len(f.Sites)-1]
	for i := range s.Lookups {
		if l := &s.Lookups[i]; l.Tool == "get_item" {
			l.Cues = nil
			l.Predicate = &Predicate{When: binding.AgentSaidWord("details"), Held: Count{N: 20}, Reach: Count{N: 12}}
		}
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	pWhen := func(f *Flow, lines ...string) float64 {
		o := itemOffer(t, f, lines...)
		if o == nil {
			t.Fatal("get_item not offered")
		}
		return o.PWhen
	}
	held, not := (12+0.5)/(20+1.0), (0+0.5)/(20+1.0) // the lookup's 12 reaches were all where it held
	said := pWhen(f, "user", "My order, please.", "assistant", "Let me pull up the details.")
	if math.Abs(said-held) > 1e-9 {
		t.Errorf("the agent said details: P(when) %.3f, want %.3f", said, held)
	}
	if got := pWhen(f, "user", "The details of my order, please.", "assistant", "Let me look."); math.Abs(got-not) > 1e-9 {
		t.Errorf("only the customer said details: P(when) %.3f, want %.3f", got, not)
	}
	// A flow not learned with the agent's words, which does not hear the
	// agent, is refused, naming the predicate.
	f.Learned.AgentWords = false
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "predicate.when") || !strings.Contains(err.Error(), "learned.agent_words") {
		t.Errorf("Validate: %v, want an error naming the predicate and learned.agent_words", err)
	}
}

// A merge adds the counts of the cues both shards have, by word and by
// whose words they are: the customer's "account" and the agent's are two
// cues, and one only a shard has is dropped.
func TestMergeCuesByWhom(t *testing.T) {
	cue := func(word, by string, n int) Cue {
		return Cue{Word: word, By: by, Said: Count{N: n}, Reach: Count{N: n}, Tasks: Count{N: n}}
	}
	have := mergeCues(nil, []Cue{cue("account", "", 5), cue("account", CueByAgent, 6)}, false)
	got := mergeCues(have, []Cue{cue("account", CueByAgent, 7), cue("look", CueByAgent, 8)}, true)
	if len(got) != 1 || got[0].Name() != "agent: account" || got[0].Said.N != 13 {
		t.Errorf("merged %+v, want the agent's account said 13 times", got)
	}
}

// itemOffer serves f to the shop's session after the conversation lines
// (role, text, role, text, …) and returns its first offer of get_item,
// nil if none.
func itemOffer(t *testing.T, f *Flow, lines ...string) *Offer {
	t.Helper()
	s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(lines); i += 2 {
		s.Message(lines[i], lines[i+1])
	}
	ds, _ := serve(t, s, answerShop)
	for _, d := range ds {
		for _, o := range d.Offers {
			if o.Tool == "get_item" {
				return &o
			}
		}
	}
	return nil
}
