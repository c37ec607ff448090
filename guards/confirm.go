package guards

import (
	"strings"
	"unicode"

	"github.com/hoist-mcp/hoist/oracle"
)

// Both policies: "Before taking any action that updates the database ...,
// you must list the action details and obtain explicit user confirmation
// (yes) to proceed." The word list below is the whole of the confirmation
// rule's judgment: the customer's last message before the write holds a
// word or phrase of yes. It is only ever logged (manual, --confirm-judge:
// it cannot tell a confirmation from a request, "yes, and also cancel the
// other one"); the confirmation judge, which will read Check.Confirmation,
// is meant to replace it.

// yesWords are the single words that say yes.
var yesWords = map[string]bool{
	"yes": true, "yeah": true, "yep": true, "yup": true, "sure": true, "ok": true, "okay": true,
	"confirm": true, "confirmed": true, "confirming": true, "proceed": true, "correct": true,
	"absolutely": true, "definitely": true, "agreed": true,
}

// yesPhrases are the phrases that say yes, matched on the message's words
// joined by single spaces.
var yesPhrases = []string{"go ahead", "please do", "do it", "sounds good", "that works", "that's right", "let's do", "lets do"}

// saysYes reports whether a message holds a word or phrase of yes.
func saysYes(text string) bool {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	})
	for _, w := range words {
		if yesWords[strings.Trim(w, "'")] {
			return true
		}
	}
	joined := " " + strings.Join(words, " ") + " "
	for _, p := range yesPhrases {
		if strings.Contains(joined, " "+p+" ") {
			return true
		}
	}
	return false
}

// confirmed is the rule <domain>.confirmed: the customer's last message
// before the write says yes. Without a conversation (no --context) it
// lacks its fact.
func confirmed(s *Session, c *call) Verdict {
	conv := make([]oracle.Message, 0, len(s.conv))
	asked := false
	for _, m := range s.conv {
		conv = append(conv, oracle.Message{Role: m.Role, Content: m.Text})
		asked = asked || m.Role == "user"
	}
	if !asked {
		return lacks("the customer's messages (--context)")
	}
	// The exchange the judge is asked about, found as the judge finds it.
	x := oracle.LastExchange(conv)
	conf := &Confirmation{AgentSaid: x.Said, UserSaid: x.Reply}
	c.confirm = conf
	if saysYes(conf.UserSaid) {
		return allow()
	}
	return refuse("the customer's last message does not say yes to it: %s", clipQuote(conf.UserSaid, 120))
}

// clipQuote quotes text for a reason, cut to at most max runes.
func clipQuote(text string, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	r := []rune(text)
	if len(r) > max {
		text = string(r[:max]) + "…"
	}
	return "\"" + text + "\""
}
