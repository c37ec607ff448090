package guards

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/jsontext"
)

// The domains with rules.
const (
	Retail  = "retail"
	Airline = "airline"
)

// Domains returns the domains that have rules, sorted.
func Domains() []string { return []string{Airline, Retail} }

// Mode says what a rule's refusal does.
type Mode string

// The modes.
const (
	// Enforce refuses the write: it never reaches the server.
	Enforce Mode = "enforce"
	// Log only records the verdict; the write goes on.
	Log Mode = "log"
	// Off does not check the rule at all.
	Off Mode = "off"
)

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Enforce, Log, Off:
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want enforce, log or off", s)
}

// ParseModes reads RULE=MODE settings, as hoist-mcp --guard and hoist guards
// --guard take them: each rule must exist in some domain. The error names
// the setting that is wrong.
func ParseModes(settings []string) (map[string]Mode, error) {
	if len(settings) == 0 {
		return nil, nil
	}
	modes := map[string]Mode{}
	for _, f := range settings {
		id, m, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want RULE=enforce, RULE=log or RULE=off", f)
		}
		mode, err := ParseMode(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if _, ok := FindRule(id); !ok {
			return nil, fmt.Errorf("%s: no rule %s (docs/guards.md lists them)", f, id)
		}
		modes[id] = mode
	}
	return modes, nil
}

// Outcome is a rule's verdict on one write.
type Outcome string

// The outcomes.
const (
	// Allow: the facts the rule needs were shown, and the write keeps it.
	Allow Outcome = "allow"
	// Refuse: the facts shown say the write breaks the rule.
	Refuse Outcome = "refuse"
	// Lacks: a fact the rule needs was never shown, so it cannot decide,
	// and does not refuse.
	Lacks Outcome = "lacks"
)

// Verdict is one rule's verdict on one write.
type Verdict struct {
	Rule    string  `json:"rule"`
	Outcome Outcome `json:"verdict"`
	// Reason says why, for a refusal: it reads on from "nothing changed: ",
	// as in "'found it cheaper' is not an accepted reason".
	Reason string `json:"reason,omitempty"`
	// Lacks names the fact that was missing, for Lacks.
	Lacks string `json:"lacks,omitempty"`
	// Enforced is true when the rule's mode is Enforce: a refusal then
	// stops the write.
	Enforced bool `json:"enforced"`
}

// Confirmation is what the confirmation judge will be asked about a write
// (manual, --confirm-judge): what the agent said last before the customer's
// last message, and that message. The word list's verdict is the
// *.confirmed rule's; a judge, when one is wired, answers from these.
type Confirmation struct {
	AgentSaid string `json:"agent_said,omitempty"`
	UserSaid  string `json:"user_said,omitempty"`
}

// Check is the rules' verdicts on one call.
type Check struct {
	// Tool is the call's tool; Write is true when it is one of the domain's
	// writes, the only calls the rules check (Verdicts is empty otherwise).
	Tool  string
	Write bool
	// Verdicts are every rule's that covers the tool and is not Off, in
	// the domain's order of rules.
	Verdicts []Verdict
	// Refused is the first enforced refusal, nil when the call may go on.
	Refused *Verdict
	// Confirmation is the conversation the confirmation rule read, for the
	// judge; nil when the write is not checked for a confirmation.
	Confirmation *Confirmation
}

// RefusalPrefix starts every refusal the agent gets.
const RefusalPrefix = "Refused by the policy check, so "

// Refusal returns the text of the agent's error result for a refused call,
// in the manual's words: "Refused by the policy check, so
// cancel_pending_order was not run and nothing changed: 'found it cheaper'
// is not an accepted reason (policy check retail.cancel_reason)". It is ""
// when nothing refused the call.
func (c Check) Refusal() string {
	if c.Refused == nil {
		return ""
	}
	return RefusalText(c.Tool, c.Refused.Reason, c.Refused.Rule)
}

// RefusalText is the refusal's text for tool, by rule, for reason.
func RefusalText(tool, reason, rule string) string {
	return RefusalPrefix + tool + " was not run and nothing changed: " + reason + " (policy check " + rule + ")"
}

// Rule is one policy rule of a domain.
type Rule struct {
	// ID is stable: <domain>.<name>.
	ID string
	// Policy is the rule in a sentence, from the domain's policy.
	Policy string
	// Tools are the writes the rule checks; nil means every write.
	Tools []string
	// Facts are what the rule needs to decide; a write whose facts were not
	// shown is let through (Lacks).
	Facts []string
	// Default is the rule's mode unless configured otherwise.
	Default Mode
	// LogOnly is true for a rule hoist-mcp never enforces (the confirmation
	// rules' word list, which cannot tell a confirmation from a request;
	// manual, --confirm-judge). hoist guards may still count what it would
	// refuse as if enforced.
	LogOnly bool

	check func(s *Session, c *call) Verdict
}

// Covers reports whether the rule checks a write of tool.
func (r *Rule) Covers(tool string) bool { return r.Tools == nil || slices.Contains(r.Tools, tool) }

// Rules returns a domain's rules, in their order; an unknown domain is an
// error that names the domains there are.
func Rules(domain string) ([]*Rule, error) {
	switch domain {
	case Retail:
		return retailRules, nil
	case Airline:
		return airlineRules, nil
	}
	return nil, fmt.Errorf("no guards for domain %q: want %s", domain, strings.Join(Domains(), " or "))
}

// Writes returns a domain's write tools, sorted: the calls the rules check.
func Writes(domain string) []string {
	var w map[string]bool
	switch domain {
	case Retail:
		w = retailWrites
	case Airline:
		w = airlineWrites
	}
	out := make([]string, 0, len(w))
	for t := range w {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// FindRule returns the rule with id, in any domain.
func FindRule(id string) (*Rule, bool) {
	for _, d := range Domains() {
		rs, _ := Rules(d)
		for _, r := range rs {
			if r.ID == id {
				return r, true
			}
		}
	}
	return nil, false
}

// Config configures a Session.
type Config struct {
	// Domain picks the rules: Retail or Airline.
	Domain string
	// Modes override rules' defaults, by rule id.
	Modes map[string]Mode
	// Now is the session's clock for rules of time (airline's 24 hours
	// since booking, flights already flown); zero means the domain's
	// policy time (AirlineNow), the clock τ²-bench's airline runs on.
	Now time.Time
}

// AirlineNow is the time τ²-bench's airline policy states ("The current time
// is 2024-05-15 15:00:00 EST"), written as the database writes times: EST,
// without a zone.
var AirlineNow = time.Date(2024, 5, 15, 15, 0, 0, 0, time.UTC)

// CheckModes checks a Config's Modes against the domain's rules: every id
// must be one of them.
func CheckModes(domain string, modes map[string]Mode) error {
	rules, err := Rules(domain)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(modes))
	for id := range modes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !slices.ContainsFunc(rules, func(r *Rule) bool { return r.ID == id }) {
			return fmt.Errorf("no rule %s in domain %s: the rules are %s", id, domain, strings.Join(ruleIDs(rules), ", "))
		}
	}
	return nil
}

func ruleIDs(rules []*Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.ID
	}
	return out
}

// Session is one conversation's facts and the domain's rules over them.
// It is owned by one goroutine.
type Session struct {
	domain string
	rules  []*Rule
	modes  []Mode // by rule index
	now    time.Time
	writes map[string]bool

	// The conversation, in order.
	conv []Message
	// user is the customer the conversation is with: the first user the
	// session identified.
	user string

	retail  *retailFacts
	airline *airlineFacts
}

// Message is one line of the conversation.
type Message struct {
	Role, Text string
}

// NewSession returns a session of c.Domain with no facts yet.
func NewSession(c Config) (*Session, error) {
	rules, err := Rules(c.Domain)
	if err != nil {
		return nil, err
	}
	if err := CheckModes(c.Domain, c.Modes); err != nil {
		return nil, err
	}
	s := &Session{domain: c.Domain, rules: rules, now: c.Now, modes: make([]Mode, len(rules))}
	for i, r := range rules {
		s.modes[i] = r.Default
		if m, ok := c.Modes[r.ID]; ok {
			s.modes[i] = m
		}
	}
	switch c.Domain {
	case Retail:
		s.retail = newRetailFacts()
		s.writes = retailWrites
	case Airline:
		s.airline = newAirlineFacts()
		s.writes = airlineWrites
		if s.now.IsZero() {
			s.now = AirlineNow
		}
	}
	return s, nil
}

// Domain returns the session's domain.
func (s *Session) Domain() string { return s.domain }

// Modes returns each rule's mode in this session, in the rules' order.
func (s *Session) Modes() []RuleMode {
	out := make([]RuleMode, len(s.rules))
	for i, r := range s.rules {
		out[i] = RuleMode{Rule: r, Mode: s.modes[i]}
	}
	return out
}

// RuleMode is a rule with its mode in a session.
type RuleMode struct {
	Rule *Rule
	Mode Mode
}

// IsWrite reports whether tool is one of the domain's writes.
func (s *Session) IsWrite(tool string) bool { return s.writes[baseName(tool)] }

// Message adds a line of the conversation (role "user" or "assistant").
func (s *Session) Message(role, text string) {
	s.conv = append(s.conv, Message{Role: role, Text: text})
}

// Result adds what a call's result showed the agent: the call's own result,
// and each lookup a flow appended to it (after mcpmsg.Banner). args are the
// call's arguments as sent; text is the result's text items joined by
// newlines.
func (s *Session) Result(tool string, args json.RawMessage, text string, isError bool) {
	own, lookups := splitLookups(text)
	s.result(baseName(tool), args, own, isError)
	for _, l := range lookups {
		s.result(baseName(l.Tool), l.Args, l.Text, isErrorText(l.Text))
	}
}

func (s *Session) result(tool string, args json.RawMessage, text string, isError bool) {
	a, _ := parseObject(args)
	switch {
	case s.retail != nil:
		s.retail.result(s, tool, a, text, isError)
	case s.airline != nil:
		s.airline.result(s, tool, a, text, isError)
	}
}

// Sent says that a write went to the server: the rules that count writes
// (an order's items are modified once) count it from now on, until its
// result says it failed.
func (s *Session) Sent(tool string, args json.RawMessage) {
	tool = baseName(tool)
	if !s.writes[tool] {
		return
	}
	a, _ := parseObject(args)
	if s.retail != nil {
		s.retail.sent(tool, a)
	}
}

// Check returns every rule's verdict on a call of tool with args, from the
// facts so far. Only the domain's writes are checked.
func (s *Session) Check(tool string, args json.RawMessage) Check {
	c := Check{Tool: tool}
	base := baseName(tool)
	if !s.writes[base] {
		return c
	}
	c.Write = true
	a, _ := parseObject(args)
	cl := &call{tool: base, args: a}
	for i, r := range s.rules {
		m := s.modes[i]
		if m == Off || !r.Covers(base) {
			continue
		}
		v := r.check(s, cl)
		v.Rule = r.ID
		v.Enforced = m == Enforce
		c.Verdicts = append(c.Verdicts, v)
	}
	for i := range c.Verdicts {
		if v := &c.Verdicts[i]; v.Outcome == Refuse && v.Enforced {
			c.Refused = v
			break
		}
	}
	if cl.confirm != nil {
		c.Confirmation = cl.confirm
	}
	return c
}

// call is a write being checked.
type call struct {
	tool string
	args map[string]any
	// confirm is set by the confirmation rule.
	confirm *Confirmation
}

func (c *call) str(name string) (string, bool) {
	v, ok := c.args[name].(string)
	return v, ok
}

func (c *call) strs(name string) ([]string, bool) {
	list, ok := c.args[name].([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// identify notes a user the session identified: the first is the one the
// conversation is with.
func (s *Session) identify(user string) {
	if s.user == "" && user != "" {
		s.user = user
	}
}

// verdicts, for the rules' bodies.

func allow() Verdict { return Verdict{Outcome: Allow} }

func refuse(format string, args ...any) Verdict {
	return Verdict{Outcome: Refuse, Reason: fmt.Sprintf(format, args...)}
}

func lacks(fact string) Verdict { return Verdict{Outcome: Lacks, Lacks: fact} }

// baseName drops a server qualification (server::tool, as episodes of
// several servers name tools).
func baseName(tool string) string {
	if i := strings.LastIndex(tool, "::"); i >= 0 {
		return tool[i+2:]
	}
	return tool
}

// parseObject parses a JSON object's text (arguments, a record) by
// jsontext's rules; ok is false for anything else.
func parseObject(b []byte) (map[string]any, bool) {
	if len(b) == 0 {
		return nil, false
	}
	v, ok := jsontext.Parse(b)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// isErrorText reports whether a result text is an error as τ²-bench's
// tools word one ("Error: ..."), for the lookups an appended item reports
// without their isError.
func isErrorText(text string) bool { return strings.HasPrefix(text, "Error:") }
