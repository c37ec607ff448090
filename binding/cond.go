package binding

import (
	"fmt"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Cond is a condition on what a site returned: a predicate under which a
// lookup is used more or less often (an order's status, a reservation's
// cabin). It is written
//
//	$result.status == "delivered"    the value at a path equals a constant
//	$result.gift_card                the path names a value: not null, false, "", [] or {}
//	said "compensation"              the customer said the word (as [said] names a value)
//	agent said "account"             the agent said the word since the customer's last message (Scope.Agent)
//
// over the roots of a binding, without a fan-out. The zero Cond never holds.
// A Cond is immutable and safe for concurrent use.
type Cond struct {
	left  Expr
	eq    bool   // an equality; else presence
	right string // the constant, canonical JSON
	ok    bool
	// word is said "word": the customer said it (Said.Named); with agent,
	// agent said "word": the agent said it since the customer's last
	// message (Scope.Agent).
	word  string
	agent bool
}

// SaidWord returns the condition that the customer said word.
func SaidWord(word string) Cond { return Cond{word: word, ok: true} }

// AgentSaidWord returns the condition that the agent said word since the
// customer's last message.
func AgentSaidWord(word string) Cond { return Cond{word: word, agent: true, ok: true} }

// Word returns the word of a said or agent said condition, and whether it
// is the agent's; "" for a condition on a result.
func (c Cond) Word() (word string, agent bool) { return c.word, c.agent }

// ParseCond parses a condition; errors are *SyntaxError.
func ParseCond(s string) (Cond, error) {
	rest, agent := strings.CutPrefix(s, "agent ")
	if w, ok := strings.CutPrefix(rest, "said "); ok {
		v, ok := jsontext.ParseString(strings.TrimSpace(w))
		word, isStr := v.(string)
		if !ok || !isStr || strings.TrimSpace(word) == "" {
			return Cond{}, &SyntaxError{Expr: s, Pos: len(s) - len(w), Msg: "want a word as a JSON string after said"}
		}
		if agent {
			return AgentSaidWord(word), nil
		}
		return SaidWord(word), nil
	}
	left, right, eq := strings.Cut(s, " == ")
	e, err := Parse(left)
	if err != nil {
		return Cond{}, err
	}
	fail := func(msg string) error { return &SyntaxError{Expr: s, Pos: 0, Msg: msg} }
	switch {
	case e.IsConst() || e.root == rootConcat || e.root == rootArray:
		return Cond{}, fail("a condition reads a path: want $result.member == constant, or $result.member")
	case e.fan:
		return Cond{}, fail("a condition reads one value: no [*] or [said]")
	}
	c := Cond{left: e, eq: eq, ok: true}
	if eq {
		r := strings.TrimSpace(right)
		if !jsontext.ValidString(r) {
			return Cond{}, &SyntaxError{Expr: s, Pos: len(left) + 4, Msg: "want a JSON constant after =="}
		}
		v, _ := jsontext.ParseString(r)
		c.right = jsontext.Canonical(v)
	}
	return c, nil
}

// MustParseCond is ParseCond for conditions known to be good.
func MustParseCond(s string) Cond {
	c, err := ParseCond(s)
	if err != nil {
		panic(err)
	}
	return c
}

// Equals returns the condition that the value at path e equals v, a JSON
// scalar.
func Equals(e Expr, v any) Cond {
	return Cond{left: e, eq: true, right: jsontext.Canonical(v), ok: true}
}

// Holds reports whether the condition holds in the scope.
func (c Cond) Holds(s *Scope) bool {
	if !c.ok {
		return false
	}
	if c.word != "" {
		if c.agent {
			return s.Agent.Named(c.word)
		}
		return s.Said.Named(c.word)
	}
	var e ev
	if f := c.left.values(s, &e); f.why != "" || len(e.out) != 1 {
		return false
	}
	v := e.out[0]
	if c.eq {
		if k := scalarText(v); k != "" {
			return k == c.right
		}
		return jsontext.Canonical(v) == c.right
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// scalarText is a string's canonical JSON without the encoder, for the
// strings conditions compare most; "" for anything else.
func scalarText(v any) string {
	s, ok := v.(string)
	if !ok {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return ""
		}
	}
	return `"` + s + `"`
}

// String returns the condition in its canonical form.
func (c Cond) String() string {
	if !c.ok {
		return ""
	}
	if c.word != "" {
		if c.agent {
			return "agent said " + jsontext.Canonical(c.word)
		}
		return "said " + jsontext.Canonical(c.word)
	}
	if c.eq {
		return c.left.String() + " == " + c.right
	}
	return c.left.String()
}

// MarshalText writes the canonical condition.
func (c Cond) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a condition.
func (c *Cond) UnmarshalText(text []byte) error {
	nc, err := ParseCond(string(text))
	if err != nil {
		return fmt.Errorf("condition: %w", err)
	}
	*c = nc
	return nil
}
