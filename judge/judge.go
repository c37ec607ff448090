// Package judge is the confirmation judge (manual, "Active mode",
// --confirm-judge): each write a confirmation rule checks (retail.confirmed,
// airline.confirmed) is put to the System-One model with one question, did
// the customer's reply explicitly agree to this exact change?, and with
// --confirm-second a second one, had the agent proposed it? The guards' word
// list for those rules is only ever logged; the judge is meant to replace it.
//
// The proxy's --confirm-judge and hoist confirm both judge through this
// package, from the same guards.Confirmation and with the oracle package's
// question builders, so the same moment of a conversation is the same
// question in both and its answer is cached once.
//
//	j := judge.Judge{Oracle: o, Threshold: 0.5, Second: judge.SecondProposed}
//	if c := check.Confirmation; c != nil {
//		v := j.Ask(ctx, tool, args, *c)
//		if v.Fails && enforce { answer(v.Refusal(tool)) }
//	}
//
// A judge that cannot answer refuses nothing: an answer that is not
// Answered (no key, a cache miss under replay, an error, the session's
// questions spent) is no opinion, and only a yes or a no counts.
package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/oracle"
)

// DefaultThreshold is --confirm-threshold's default: a write whose P(yes)
// is below it fails.
const DefaultThreshold = 0.5

// Second is --confirm-second: which second question to ask, if any.
type Second string

// The second questions.
const (
	SecondNone      Second = ""          // ask only the first question
	SecondProposed  Second = "proposed"  // had the agent proposed this change? (recommended)
	SecondDescribed Second = "described" // had the agent described it, every detail? (too literal)
)

// ParseSecond reads --confirm-second's value.
func ParseSecond(s string) (Second, error) {
	switch v := Second(s); v {
	case SecondProposed, SecondDescribed:
		return v, nil
	}
	return "", fmt.Errorf("unknown second question %q: want proposed or described", s)
}

// Judge asks the judge's questions. The zero Threshold is
// DefaultThreshold. A Judge is safe for concurrent use when its Oracle is
// (every oracle of packages oracle and oracle/client is).
type Judge struct {
	Oracle    oracle.Oracle
	Threshold float64
	Second    Second
	// SecondShadow only logs the second answer: a write fails on the first
	// answer alone (--confirm-second-shadow).
	SecondShadow bool
	// ApprovalTTL is how long a verdict's Approval stays good
	// (DefaultApprovalTTL when 0); Now is the clock (time.Now when nil).
	ApprovalTTL time.Duration
	Now         func() time.Time
}

// Policy names the judge's policy and its version, which every approval
// it gives carries: the questions' prompt versions, the threshold and the
// second question. A verdict given under other settings does not pass a
// call under these.
func (j Judge) Policy() string {
	th := j.Threshold
	if th == 0 {
		th = DefaultThreshold
	}
	p := fmt.Sprintf("confirm-judge %s threshold %g", oracle.VersionConfirm, th)
	switch j.Second {
	case SecondProposed:
		p += " second " + oracle.VersionProposed
	case SecondDescribed:
		p += " second " + oracle.VersionDescribed
	}
	if j.Second != SecondNone && j.SecondShadow {
		p += " shadow"
	}
	return p
}

// Verdict is the judge's judgment of one write.
type Verdict struct {
	// First is the answer to "did the customer's reply explicitly agree to
	// this exact change?".
	First oracle.Answer
	// Second is the answer to the second question, when one was asked;
	// SecondKind names it and SecondShadow says it was only logged.
	Second       *oracle.Answer
	SecondKind   Second
	SecondShadow bool
	// Fails is true when the answers say the write must not go on: the
	// first answer is a no, or the second is and it is not a shadow. An
	// answer that is not Answered never makes a write fail.
	Fails bool
	// Threshold is the P(yes) below which an answer is a no.
	Threshold float64
	// Approval, when the write does not fail, binds the judge's leave to
	// this exact call, under Policy, for ApprovalTTL: the proxy sends the
	// call only when the approval passes the call it is about to send.
	Approval Approval
}

// Ask judges one write from the conversation the confirmation rule read.
// The second question is asked only when the first did not already fail
// the write (a no needs no second opinion), or when it is a shadow, so
// that the log shows both.
func (j Judge) Ask(ctx context.Context, tool string, args json.RawMessage, c guards.Confirmation) Verdict {
	th := j.Threshold
	if th == 0 {
		th = DefaultThreshold
	}
	x := oracle.Exchange{Said: c.AgentSaid, Reply: c.UserSaid}
	call := oracle.Call{Tool: tool, Arguments: args}
	v := Verdict{Threshold: th, First: j.Oracle.Ask(ctx, oracle.Confirmation(x, call))}
	v.Fails = isNo(v.First, th)
	if j.Second != SecondNone && (!v.Fails || j.SecondShadow) {
		q := oracle.Proposed(x, call)
		if j.Second == SecondDescribed {
			q = oracle.Described(x, call)
		}
		a := j.Oracle.Ask(ctx, q)
		v.Second, v.SecondKind, v.SecondShadow = &a, j.Second, j.SecondShadow
		if !j.SecondShadow && isNo(a, th) {
			v.Fails = true
		}
	}
	if !v.Fails {
		now := time.Now
		if j.Now != nil {
			now = j.Now
		}
		v.Approval = Approve(MethodToolsCall, tool, args, j.Policy(), now(), j.ApprovalTTL)
	}
	return v
}

// MethodToolsCall is the method of the calls the judge approves.
const MethodToolsCall = "tools/call"

// isNo reports whether an answer is a no: answered, with P(yes) below th.
func isNo(a oracle.Answer, th float64) bool { return a.Answered && a.PYes < th }

// Refusal is the isError text the agent gets when an enforcing judge
// refuses tool, in the words of the guards' refusals. It names the answer
// that failed the write, so that the agent knows what to do next: describe
// the change and ask again.
func (v Verdict) Refusal(tool string) string {
	first := "no answer"
	if v.First.Answered {
		first = fmt.Sprintf("p_yes %.2f", v.First.PYes)
	}
	why := "confirmation judge: " + first
	if !isNo(v.First, v.Threshold) && v.Second != nil {
		why = fmt.Sprintf("confirmation judge: %s; %s: p_yes %.2f", first, v.SecondKind, v.Second.PYes)
	}
	return guards.RefusalPrefix + tool + " was not run and nothing changed: the customer has not explicitly agreed to this exact change (" +
		why + "); describe the change and ask the customer to confirm it first."
}

// Keys are the cache keys of the questions asked, first then second, for
// the confirm log.
func (v Verdict) Keys() []string {
	keys := []string{v.First.Key}
	if v.Second != nil {
		keys = append(keys, v.Second.Key)
	}
	return keys
}
