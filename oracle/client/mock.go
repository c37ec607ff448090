package client

import (
	"context"
	"strings"
	"unicode"

	"github.com/hoist-mcp/hoist/oracle"
)

// The mock's answers.
const (
	MockYes    = 0.9 // the rule says yes
	MockNo     = 0.1 // the rule says no
	MockUnsure = 0.5 // the rule has no opinion
)

// Mock answers every question at once, with no network and no cache
// (--oracle mock), by a rule a person can predict from the conversation:
//
//   - Confirmation: MockYes when the customer's reply holds a word of
//     agreement (yes, yeah, yep, yup, sure, ok, okay, confirm, confirmed,
//     correct, proceed, "go ahead", "please do", "do it", "sounds good",
//     "why not", "no problem", "not a problem", "no worries") and no word
//     of refusal (no, nope, not, don't, dont, wait, stop, "hold on",
//     "never mind") outside those phrases, as whole words in any case;
//     else MockNo. So negation is read in its common forms: "why not" and
//     "no problem" agree, "not sure", "not yet", "do not" and "not
//     correct" refuse. It is still a word rule, not an understanding: a
//     double negation, irony, or a refusal without those words passes it.
//   - Proposed and Described: MockYes when every string and number among
//     the call's arguments appears in what the agent said (in any case);
//     else MockNo.
//   - Lookup: MockYes when one of the lookup's argument values appears in
//     the agent's words or the customer's; else MockUnsure.
//   - Any other question: MockUnsure.
//
// A question that is Unaskable is not answered, as in every mode. The
// answer carries the key jev would give the question, so logs written
// under mock name the same questions. Like the guards' word list, the
// rule cannot tell a confirmation from a request: it is for trying the
// judge and for tests, not for judging.
type Mock struct {
	model string
}

var _ oracle.Oracle = (*Mock)(nil)

// NewMock returns the mock; model only names its keys.
func NewMock(model string) *Mock { return &Mock{model: model} }

// Key returns q's cache key (oracle.Key with the mock's model).
func (m *Mock) Key(q oracle.Question) string { return oracle.Key(m.model, q) }

// Ask answers q by the rule.
func (m *Mock) Ask(_ context.Context, q oracle.Question) oracle.Answer {
	key, a, done := settled(m.model, nil, q)
	if done {
		return a
	}
	return oracle.Answer{Key: key, Answered: true, PYes: mockRule(q), From: oracle.FromMock}
}

var (
	agreeing = []string{"yes", "yeah", "yep", "yup", "sure", "ok", "okay", "confirm", "confirmed", "correct", "proceed",
		"go ahead", "please do", "do it", "sounds good", "why not", "no problem", "not a problem", "no worries"}
	refusing = []string{"no", "nope", "not", "don't", "dont", "wait", "stop", "hold on", "never mind"}
	// negatedAgreements are agreements spelled with a word of refusal:
	// their words are not read as refusing.
	negatedAgreements = []string{"why not", "no problem", "not a problem", "no worries"}
)

func mockRule(q oracle.Question) float64 {
	x := q.Exchange()
	switch q.Kind {
	case oracle.KindConfirm:
		words := wordsOf(x.Reply)
		rest := words
		for _, p := range negatedAgreements {
			for strings.Contains(rest, " "+p+" ") { // "why not why not": matches that share a space
				rest = strings.ReplaceAll(rest, " "+p+" ", " , ")
			}
		}
		if hasAny(words, agreeing) && !hasAny(rest, refusing) {
			return MockYes
		}
		return MockNo
	case oracle.KindProposed, oracle.KindDescribed:
		said := strings.ToLower(x.Said)
		for _, v := range q.Values() {
			if !strings.Contains(said, strings.ToLower(v)) {
				return MockNo
			}
		}
		return MockYes
	case oracle.KindLookup:
		seen := strings.ToLower(x.Said + "\n" + x.Reply)
		for _, v := range q.Values() {
			if v != "" && strings.Contains(seen, strings.ToLower(v)) {
				return MockYes
			}
		}
	}
	return MockUnsure
}

// wordsOf returns text's words, lowercased and joined by single spaces,
// with a space at each end, so that " go ahead " finds a phrase.
func wordsOf(text string) string {
	text = strings.ReplaceAll(strings.ToLower(text), "’", "'")
	f := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	return " " + strings.Join(f, " ") + " "
}

func hasAny(words string, phrases []string) bool {
	for _, p := range phrases {
		if strings.Contains(words, " "+p+" ") {
			return true
		}
	}
	return false
}
