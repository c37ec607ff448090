package guards

import (
	"encoding/json"
	"slices"
	"strings"
)

// Group is an episode's outcome, which splits a Report: the writes a rule
// would refuse in successful episodes are its false alarms (issue 10,
// point 7).
type Group string

// The groups.
const (
	Reward1 Group = "reward_1"       // the task was solved (reward 1)
	Below1  Group = "reward_below_1" // it was not (reward below 1)
	Unknown Group = "unknown"        // nobody said (a session log without its .meta.json)
)

// GroupOf returns the group of an episode's reward (nil when unknown).
func GroupOf(reward *float64) Group {
	switch {
	case reward == nil:
		return Unknown
	case *reward >= 1:
		return Reward1
	}
	return Below1
}

// Split counts something per group, and in total.
type Split struct {
	All     int `json:"all"`
	Reward1 int `json:"reward_1"`
	Below1  int `json:"reward_below_1"`
	Unknown int `json:"unknown"`
}

// Add counts one in group g and in the total.
func (s *Split) Add(g Group) {
	s.All++
	switch g {
	case Reward1:
		s.Reward1++
	case Below1:
		s.Below1++
	default:
		s.Unknown++
	}
}

// Of returns the count of group g.
func (s Split) Of(g Group) int {
	switch g {
	case Reward1:
		return s.Reward1
	case Below1:
		return s.Below1
	}
	return s.Unknown
}

// Tally is what a rule, or the rules together, did to the writes they
// checked: how many they checked, would refuse, and lacked a fact for.
// RefusedDone are the refused writes the server then carried out (their
// result was no error): a refusal of a write the server failed anyway
// changes nothing, so in a successful episode these are the false alarms
// that cost something.
type Tally struct {
	Checked     Split `json:"checked"`
	Refused     Split `json:"would_refuse"`
	RefusedDone Split `json:"would_refuse_server_did"`
	Lacked      Split `json:"lacked_facts"`
}

// RuleTally is one rule's Tally.
type RuleTally struct {
	Rule   string `json:"rule"`
	Domain string `json:"domain"`
	Mode   Mode   `json:"mode"`
	Tally
}

// Where names a write in the trajectories a Report was made from.
type Where struct {
	// Episode is the session (or "<results file>#<simulation>"); TaskID
	// and Reward are known for τ²-bench and for logs with a .meta.json.
	Episode string   `json:"episode"`
	TaskID  string   `json:"task_id,omitempty"`
	Reward  *float64 `json:"reward"`
	// Call is the write's index among the episode's calls, and ID its
	// JSON-RPC id as sent.
	Call int    `json:"call"`
	ID   string `json:"id,omitempty"`
}

// Fate is what became of a write in its trajectory.
type Fate string

// The fates.
const (
	// ServerDid: the server carried the write out (its result was no
	// error).
	ServerDid Fate = "server_did"
	// ServerFailed: the server answered it with an error.
	ServerFailed Fate = "server_failed"
	// ProxyRefused: the proxy answered it with its refusal (the policy
	// check's or the confirmation judge's), so the server never saw it.
	ProxyRefused Fate = "proxy_refused"
	// NoAnswer: no answer was recorded.
	NoAnswer Fate = "no_answer"
)

// FateOf is the fate of a write answered with text (isError as its result
// said), or not answered at all. The proxy's refusals begin with
// RefusalPrefix, which a session log shows as the proxy's answer.
func FateOf(answered bool, text string, isError bool) Fate {
	switch {
	case !answered:
		return NoAnswer
	case !isError:
		return ServerDid
	case strings.HasPrefix(text, RefusalPrefix):
		return ProxyRefused
	}
	return ServerFailed
}

// Refusal is one write a rule would refuse, for a person to judge.
type Refusal struct {
	Where
	Group    Group           `json:"group"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"arguments"`
	Rule     string          `json:"rule"`
	Enforced bool            `json:"enforced"`
	Reason   string          `json:"reason"`
	// ServerDid is true when the server carried the write out (its result
	// was no error).
	ServerDid bool `json:"server_did"`
	// Fate says who answered the write: the server (did it, or failed it)
	// or the proxy (refused it).
	Fate Fate `json:"fate"`
}

// Report tallies the rules' verdicts over recorded trajectories (hoist
// guards): per rule, and in total over the enforced rules and over every
// rule, where a write counts once however many rules refuse it.
type Report struct {
	Episodes Split       `json:"episodes"`
	Writes   Split       `json:"writes"`
	Rules    []RuleTally `json:"rules"`
	Enforced Tally       `json:"enforced"`
	Every    Tally       `json:"every_rule"`
	Refusals []Refusal   `json:"refusals"`
}

// AddEpisode counts an episode of group g.
func (r *Report) AddEpisode(g Group) { r.Episodes.Add(g) }

// AddRules lists a session's rules with their modes, once per domain.
func (r *Report) AddRules(s *Session) {
	for _, rm := range s.Modes() {
		if slices.ContainsFunc(r.Rules, func(t RuleTally) bool { return t.Rule == rm.Rule.ID }) {
			continue
		}
		r.Rules = append(r.Rules, RuleTally{Rule: rm.Rule.ID, Domain: s.Domain(), Mode: rm.Mode})
	}
}

// AddCheck counts a write's check (a Check of a write; others are
// ignored): each verdict on its rule's row, and the write once on the
// totals. fate is what then became of the write.
func (r *Report) AddCheck(g Group, w Where, c Check, args json.RawMessage, fate Fate) {
	if !c.Write {
		return
	}
	done := fate == ServerDid
	r.Writes.Add(g)
	var any, anyEnforced, lack, lackEnforced, checkedEnforced bool
	for _, v := range c.Verdicts {
		i := slices.IndexFunc(r.Rules, func(t RuleTally) bool { return t.Rule == v.Rule })
		if i < 0 {
			continue
		}
		t := &r.Rules[i]
		t.Checked.Add(g)
		enforced := t.Mode == Enforce
		checkedEnforced = checkedEnforced || enforced
		switch v.Outcome {
		case Refuse:
			t.Refused.Add(g)
			if done {
				t.RefusedDone.Add(g)
			}
			any = true
			anyEnforced = anyEnforced || enforced
			r.Refusals = append(r.Refusals, Refusal{Where: w, Group: g, Tool: c.Tool, Args: args, Rule: v.Rule, Enforced: enforced, Reason: v.Reason, ServerDid: done, Fate: fate})
		case Lacks:
			t.Lacked.Add(g)
			lack = true
			lackEnforced = lackEnforced || enforced
		}
	}
	if len(c.Verdicts) > 0 {
		r.Every.Checked.Add(g)
	}
	if any {
		r.Every.Refused.Add(g)
		if done {
			r.Every.RefusedDone.Add(g)
		}
	}
	if lack {
		r.Every.Lacked.Add(g)
	}
	if checkedEnforced {
		r.Enforced.Checked.Add(g)
	}
	if anyEnforced {
		r.Enforced.Refused.Add(g)
		if done {
			r.Enforced.RefusedDone.Add(g)
		}
	}
	if lackEnforced {
		r.Enforced.Lacked.Add(g)
	}
}
