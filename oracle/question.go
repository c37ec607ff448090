package oracle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Question is one yes/no question, as the builders (Confirmation,
// Proposed, Described, Lookup) make it. System and Prompt are the two
// messages sent to the model; with Version and the model's name they make
// the question's key, so a change of wording is a new version and never
// meets the old wording's answers in the cache.
type Question struct {
	Kind    Kind
	Version string // the prompt's version, such as "confirm/1"
	System  string
	Prompt  string

	// What the mock's rule reads: the conversation's last exchange and
	// the argument values of the call the question is about.
	said, reply string
	values      []string
	// incomplete, when set, says why the question cannot be asked.
	incomplete string
	// clipped, when a call's arguments were too long to show whole, is
	// the SHA-256 of the whole call (clippedCall): it goes into the key,
	// so that two calls that differ only where the prompt clips them never
	// share an answer.
	clipped string
}

// Incomplete says why q cannot be asked (such as a confirmation with no
// customer message), or "" when it can. Every mode answers such a question
// with Why Unaskable, and asks nothing.
func (q Question) Incomplete() string { return q.incomplete }

// Exchange returns the conversation's last exchange that q was built
// from: what the mock's rule reads.
func (q Question) Exchange() Exchange { return Exchange{Said: q.said, Reply: q.reply} }

// Values returns the strings and numbers among the arguments of the call
// q is about (for Lookup, the lookup's), in the order of their canonical
// form: what the mock's rule looks for in the conversation.
func (q Question) Values() []string { return slices.Clone(q.values) }

// Kind names a question's purpose.
type Kind string

// The kinds of question, each with its builder.
const (
	KindConfirm   Kind = "confirm"   // Confirmation: the judge's question
	KindProposed  Kind = "proposed"  // Proposed: --confirm-second proposed
	KindDescribed Kind = "described" // Described: --confirm-second described
	KindLookup    Kind = "lookup"    // Lookup: the flow's question
)

// The prompts' versions. A version changes whenever its prompt's words
// do, so that no cached answer is read as the answer to other words.
const (
	VersionConfirm   = "confirm/1"
	VersionProposed  = "proposed/1"
	VersionDescribed = "described/1"
	VersionLookup    = "lookup/1"
)

// system is the system message of every question: one word back, which is
// all the answer's first token needs to carry.
const system = "You read a customer-service conversation between a customer and an agent, and answer a question about it with one word: yes or no."

// Message is one message of a conversation: role "user" (the customer)
// or "assistant" (the agent), as the --context file and τ²-bench's
// messages hold them.
type Message struct {
	Role    string
	Content string
}

// Exchange is the part of a conversation the questions show: what the
// agent said last before the customer's last message, and that message.
type Exchange struct {
	Said  string // the agent's last words before Reply; "" when it said nothing
	Reply string // the customer's last message; "" when there is none
}

// LastExchange finds the conversation's last exchange (Exchange): the
// last message with role "user", and the last message with role
// "assistant" and some text before it. What the agent said after the
// customer's last message is not part of it: the question is what the
// customer agreed to. Messages of other roles are passed over.
func LastExchange(conversation []Message) Exchange {
	var x Exchange
	u := -1
	for i := len(conversation) - 1; i >= 0; i-- {
		if conversation[i].Role == "user" {
			u = i
			break
		}
	}
	if u < 0 {
		return x
	}
	x.Reply = conversation[u].Content
	for i := u - 1; i >= 0; i-- {
		if m := conversation[i]; m.Role == "assistant" && strings.TrimSpace(m.Content) != "" {
			x.Said = m.Content
			break
		}
	}
	return x
}

// Call is a tool call as a question shows it: the tool's name and its
// arguments, a JSON object's text (json.RawMessage converts).
type Call struct {
	Tool      string
	Arguments []byte
}

// Confirmation is the judge's question, the one --confirm-judge and hoist
// confirm ask (the manual, "--confirm-judge"): did the customer's reply
// explicitly agree to this exact change? It shows the agent's last words,
// the customer's reply and the call. Without a customer message it is
// Unaskable: there is no reply to judge.
func Confirmation(x Exchange, c Call) Question {
	return changeQuestion(KindConfirm, VersionConfirm, x, c,
		"Did the customer's reply explicitly agree to this exact change? Answer yes or no.")
}

// Proposed is the second question of --confirm-second proposed: had the
// agent proposed this change before the customer replied?
func Proposed(x Exchange, c Call) Question {
	return changeQuestion(KindProposed, VersionProposed, x, c,
		"Had the agent proposed this change before the customer replied? Answer yes or no.")
}

// Described is the second question's first wording (--confirm-second
// described), which the manual finds too literal: had the agent described
// this exact change, every detail of the call, before the reply?
func Described(x Exchange, c Call) Question {
	return changeQuestion(KindDescribed, VersionDescribed, x, c,
		"Had the agent described this exact change, with every detail of the call, before the customer replied? Answer yes or no.")
}

func changeQuestion(kind Kind, version string, x Exchange, c Call, ask string) Question {
	var b strings.Builder
	b.WriteString("The agent said:\n")
	block(&b, x.Said)
	b.WriteString("The customer replied:\n")
	block(&b, x.Reply)
	b.WriteString("The agent now makes this change:\n")
	writeCall(&b, c)
	b.WriteString("\n")
	b.WriteString(ask)
	q := Question{Kind: kind, Version: version, System: system, Prompt: b.String(),
		said: x.Said, reply: x.Reply, values: argValues(c.Arguments), clipped: clippedCall(c)}
	if strings.TrimSpace(x.Reply) == "" {
		q.incomplete = "no customer message to judge (the conversation is not known: is --context given?)"
	}
	return q
}

// Lookup is the flow's question (--flow-decider arbiter): after the agent's
// call `after` was answered, will the agent use the lookup's result before
// it changes anything? It shows the last exchange when one is known, the
// call and the lookup. Reads commute until a write, so "before it changes
// anything" is the event a flow counts (reach).
func Lookup(x Exchange, after, lookup Call) Question {
	var b strings.Builder
	if x.Said != "" {
		b.WriteString("The agent said:\n")
		block(&b, x.Said)
	}
	if x.Reply != "" {
		b.WriteString("The customer said:\n")
		block(&b, x.Reply)
	}
	b.WriteString("The agent called this tool and has its result:\n")
	writeCall(&b, after)
	b.WriteString("A lookup could be made for the agent now:\n")
	writeCall(&b, lookup)
	b.WriteString("\nWill the agent use this lookup's result before it changes anything? Answer yes or no.")
	q := Question{Kind: KindLookup, Version: VersionLookup, System: system, Prompt: b.String(),
		said: x.Said, reply: x.Reply, values: argValues(lookup.Arguments), clipped: clippedCall(after) + clippedCall(lookup)}
	return q
}

// maxPart bounds each text a question shows, so that one long message
// cannot make a request of any size: a longer one keeps its head and its
// tail, where a proposal's summary and its question usually are.
const maxPart = 4000

// block writes a text between markers, so the model can tell where the
// conversation's words end and the question's begin.
func block(b *strings.Builder, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		text = "(nothing)"
	}
	b.WriteString("<<<\n")
	b.WriteString(Clip(text, maxPart))
	b.WriteString("\n>>>\n")
}

// clippedCall returns, when writeCall clips c's arguments, the hex SHA-256
// of c's tool and whole canonical arguments; "" when they are shown whole.
func clippedCall(c Call) string {
	args := callArgs(c)
	if len(args) <= maxPart {
		return ""
	}
	sum := sha256.Sum256([]byte(c.Tool + " " + args))
	return hex.EncodeToString(sum[:])
}

// callArgs returns a call's arguments as writeCall shows them, unclipped.
func callArgs(c Call) string {
	args := string(c.Arguments)
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	if v, ok := jsontext.Parse(c.Arguments); ok {
		return string(jsontext.AppendValue(nil, v, jsontext.Plain))
	}
	return args
}

// writeCall writes a call as one line: the tool, a space, its arguments
// as canonical JSON (members sorted; escaped only as JSON needs, so the
// model reads "&" and not "\u0026"), so two spellings of one call are one
// question.
func writeCall(b *strings.Builder, c Call) {
	b.WriteString(c.Tool)
	b.WriteByte(' ')
	b.WriteString(Clip(callArgs(c), maxPart))
	b.WriteByte('\n')
}

// Clip returns s when it is at most n bytes, else its first and last n/2
// bytes (at rune boundaries) with a marker between.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, len(s)-n/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + " […] " + s[tail:]
}

// argValues returns the strings and numbers among a call's arguments, in
// the order of their canonical form: what the mock looks for in the
// conversation.
func argValues(args []byte) []string {
	v, ok := jsontext.Parse(args)
	if !ok {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case json.Number:
			out = append(out, string(x))
		case []any:
			for _, el := range x {
				walk(el)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}
