package binding

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Said is what the customer said so far: the user messages of the
// conversation (the hoist-mcp manual's --context), which $said and [said]
// read. Customers name what they want in words: the order or reservation
// they mean, their email, the item by its name. A value counts as said when
// it is in a user message as a whole token (its letters compared without
// case); $said[kind] gives the tokens of a kind or shape, in the order they
// were first said. The zero Said has said nothing. A Said is not safe for
// concurrent use.
type Said struct {
	texts  []string
	lower  string   // every text, lowercased, joined by newlines
	tokens []string // distinct tokens, in the order first said
	seen   map[string]bool
	folded int // texts folded into lower and tokens
	// monthDays are the dates said in words without a year ("-05-22").
	monthDays map[string]bool
	// pos is the latest position said (Pick), found when posAt texts
	// were said.
	pos   position
	posOK bool
	posAt int
	// WordDates counts a date the customer said in words ("May 22", "the
	// 22nd of May, 2024") as said in the form a tool takes it, 2024-05-22
	// (issue 26, lever 4). Set it before the first Add. Off by default: on
	// the τ²-bench training tasks it saved no turn (docs/flow.md, "What
	// each lever earned"); a flow learned with it (learn.Options.WordDates)
	// says so (learned.word_dates), and is served with it.
	WordDates bool
	// words are Words(wordsMax) when wordsAt tokens were said.
	words             []string
	wordsAt, wordsMax int
}

// Add appends a user message.
func (s *Said) Add(text string) {
	if strings.TrimSpace(text) != "" {
		s.texts = append(s.texts, text)
	}
}

// Len returns how many user messages were said.
func (s *Said) Len() int { return len(s.texts) }

// fold brings lower and tokens up to date with texts.
func (s *Said) fold() {
	if s.folded == len(s.texts) {
		return
	}
	var b strings.Builder
	b.WriteString(s.lower)
	for _, t := range s.texts[s.folded:] {
		b.WriteString(strings.ToLower(t))
		b.WriteByte('\n')
		toks := Tokens(t)
		if s.WordDates {
			// A date said in words is said as a tool takes it: with its
			// year in lower and tokens, without one as the month and day
			// ("-05-22") that any year completes (values, named).
			for _, d := range wordDates(toks) {
				toks = append(toks, d)
				if d[0] != '-' {
					b.WriteString(d)
					b.WriteByte('\n')
				} else {
					if s.monthDays == nil {
						s.monthDays = map[string]bool{}
					}
					s.monthDays[d] = true
				}
			}
		}
		for _, tok := range toks {
			if s.seen == nil {
				s.seen = map[string]bool{}
			}
			if !s.seen[tok] {
				s.seen[tok] = true
				s.tokens = append(s.tokens, tok)
			}
		}
	}
	s.lower = b.String()
	s.folded = len(s.texts)
}

// named reports whether the scalar v was said, as a whole token: a string
// of at least two characters, or a number, found in a user message with
// neither a letter nor a digit just before or after it.
func (s *Said) named(v any) bool {
	if s == nil || len(s.texts) == 0 {
		return false
	}
	var text string
	switch x := v.(type) {
	case string:
		text = strings.TrimSpace(x)
		if utf8.RuneCountInString(text) < 2 {
			return false
		}
	case json.Number:
		text = string(x)
	default:
		return false
	}
	s.fold()
	if len(s.monthDays) > 0 && len(text) == 10 && isDate(text) && s.monthDays[text[4:]] {
		return true // said in words, without its year
	}
	return containsToken(s.lower, strings.ToLower(text))
}

// Named reports whether the customer said v (a string or number), as
// [said] tests it.
func (s *Said) Named(v any) bool { return s.named(v) }

// containsToken reports whether sub occurs in text with no letter or digit
// on either side.
func containsToken(text, sub string) bool {
	for from := 0; from <= len(text)-len(sub); {
		i := strings.Index(text[from:], sub)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(sub):])
		if (i == 0 || !isWordRune(before)) && (i+len(sub) == len(text) || !isWordRune(after)) {
			return true
		}
		from = i + 1
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// values returns the tokens said of kind (a kind name or a shape), in the
// order first said.
func (s *Said) values(kind string, scope *Scope) []any {
	s.fold()
	out := []any{}
	if kind == "email" {
		for _, tok := range s.tokens {
			if isEmail(tok) {
				out = append(out, tok)
			}
		}
		return out
	}
	items := parsedShape(kind) // once for every token
	year, looked := "", false
	for _, tok := range s.tokens {
		if tok[0] == '-' && len(s.monthDays) > 0 && s.monthDays[tok] {
			// A date said without its year takes the session's.
			if !looked {
				year, looked = yearOf(scope), true
			}
			if year == "" {
				continue
			}
			tok = year + tok
		}
		if matchItems(items, []rune(tok)) {
			out = append(out, tok)
		}
	}
	return out
}

// Tokens splits a message into the tokens $said reads: runs of characters
// between spaces and the punctuation that surrounds words in a sentence
// (quotes, brackets, commas and the like), a sentence's final period or
// colon trimmed. Characters ids and emails are made of stay inside a token:
// # _ - @ . / + and the like.
func Tokens(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(text, isTokenBreak) {
		f = strings.TrimRight(f, ".:")
		f = strings.TrimLeft(f, ".")
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func isTokenBreak(r rune) bool {
	if unicode.IsSpace(r) {
		return true
	}
	switch r {
	case ',', ';', '!', '?', '(', ')', '[', ']', '{', '}', '"', '\'', '<', '>', '`', '‘', '’', '“', '”', '«', '»':
		return true
	}
	return false
}

// The kinds $said knows by name; any other kind is a shape.
var kindNames = []string{"email"}

func isKind(s string) bool {
	for _, k := range kindNames {
		if s == k {
			return true
		}
	}
	return false
}

func isEmail(tok string) bool {
	at := strings.IndexByte(tok, '@')
	if at <= 0 || strings.Count(tok, "@") != 1 {
		return false
	}
	dom := tok[at+1:]
	dot := strings.LastIndexByte(dom, '.')
	return dot > 0 && dot < len(dom)-1
}

// Shapes say what a value looks like, class by class, so that $said finds
// values of the shape an argument takes in what the customer said. A shape
// is a sequence of:
//
//	9   a digit
//	A   an uppercase letter        a   a lowercase letter
//	X   an uppercase letter or a digit
//	x   a lowercase letter or a digit
//	Z   a letter of either case or a digit
//	c+  one or more of class c (any of the above)
//	\c  the character c itself (for a literal class letter, digit, + or \)
//
// and any other character for itself. ShapeOf gives a value's shapes.

// ShapeLevel says how closely a shape follows its value.
type ShapeLevel int

// The shape levels of ShapeOf.
const (
	// ShapeExact keeps each character's class: "#W8855135" is #A9999999.
	ShapeExact ShapeLevel = iota
	// ShapeWide merges each run of letters and digits into one class,
	// keeping its length: "ZFA04Y" is XXXXXX, "#W8855135" #XXXXXXXX.
	ShapeWide
	// ShapeRuns merges each run into one class of any length:
	// "sofia_li_9219" is x+_x+_9+.
	ShapeRuns
)

// ShapeOf returns the shape of a value at a level (see Shapes).
func ShapeOf(v string, level ShapeLevel) string {
	var b strings.Builder
	rs := []rune(v)
	for i := 0; i < len(rs); {
		r := rs[i]
		if !isWordRune(r) {
			if r == '+' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
			i++
			continue
		}
		if level == ShapeExact {
			b.WriteByte(classOf(r))
			i++
			continue
		}
		j := i
		var upper, lower bool
		for j < len(rs) && isWordRune(rs[j]) {
			switch classOf(rs[j]) {
			case 'A':
				upper = true
			case 'a':
				lower = true
			}
			j++
		}
		c := byte('Z')
		switch {
		case !upper && !lower:
			c = '9'
		case !lower:
			c = 'X'
		case !upper:
			c = 'x'
		}
		if level == ShapeRuns {
			b.WriteByte(c)
			b.WriteByte('+')
		} else {
			for k := i; k < j; k++ {
				b.WriteByte(c)
			}
		}
		i = j
	}
	return b.String()
}

func classOf(r rune) byte {
	switch {
	case unicode.IsDigit(r):
		return '9'
	case unicode.IsUpper(r):
		return 'A'
	}
	return 'a'
}

// shapeItem is one element of a parsed shape.
type shapeItem struct {
	class byte // 0 for a literal
	lit   rune
	many  bool
}

func parseShape(shape string) []shapeItem {
	var items []shapeItem
	rs := []rune(shape)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\' && i+1 < len(rs):
			i++
			items = append(items, shapeItem{lit: rs[i]})
		case r == '+' && len(items) > 0 && items[len(items)-1].class != 0 && !items[len(items)-1].many:
			items[len(items)-1].many = true
		case strings.ContainsRune("9AaXxZ", r):
			items = append(items, shapeItem{class: byte(r)})
		default:
			items = append(items, shapeItem{lit: r})
		}
	}
	return items
}

func classHas(c byte, r rune) bool {
	switch c {
	case '9':
		return unicode.IsDigit(r)
	case 'A':
		return unicode.IsUpper(r)
	case 'a':
		return unicode.IsLower(r)
	case 'X':
		return unicode.IsUpper(r) || unicode.IsDigit(r)
	case 'x':
		return unicode.IsLower(r) || unicode.IsDigit(r)
	case 'Z':
		return isWordRune(r)
	}
	return false
}

// MatchShape reports whether the whole of tok has the shape.
func MatchShape(shape, tok string) bool {
	return matchItems(parsedShape(shape), []rune(tok))
}

// parsedShapes keeps each shape parsed once: learn and serving match the
// few shapes of a flow against every token of a conversation, and parsing
// the shape again for each token was a quarter of learn's time.
var parsedShapes sync.Map // shape → []shapeItem

func parsedShape(shape string) []shapeItem {
	if v, ok := parsedShapes.Load(shape); ok {
		return v.([]shapeItem)
	}
	items := parseShape(shape)
	parsedShapes.Store(shape, items)
	return items
}

func matchItems(items []shapeItem, rs []rune) bool {
	for len(items) > 0 {
		it := items[0]
		if it.class == 0 {
			if len(rs) == 0 || rs[0] != it.lit {
				return false
			}
			items, rs = items[1:], rs[1:]
			continue
		}
		if !it.many {
			if len(rs) == 0 || !classHas(it.class, rs[0]) {
				return false
			}
			items, rs = items[1:], rs[1:]
			continue
		}
		// One or more: the longest run first, then shorter ones.
		n := 0
		for n < len(rs) && classHas(it.class, rs[n]) {
			n++
		}
		for ; n >= 1; n-- {
			if matchItems(items[1:], rs[n:]) {
				return true
			}
		}
		return false
	}
	return len(rs) == 0
}

// Words returns the words the customer said, lowercased, in the order
// first said: tokens of four to twenty letters, at most max of them. They
// are what a said "word" condition can be learned of.
func (s *Said) Words(max int) []string {
	if s == nil || len(s.texts) == 0 {
		return nil
	}
	s.fold()
	if s.wordsAt == len(s.tokens) && s.wordsMax == max {
		return s.words
	}
	s.words = s.words[:0]
	seen := map[string]bool{}
	for _, tok := range s.tokens {
		if len(s.words) >= max {
			break
		}
		n := utf8.RuneCountInString(tok)
		if n < 4 || n > 20 || strings.IndexFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			continue
		}
		w := strings.ToLower(tok)
		if !seen[w] {
			seen[w] = true
			s.words = append(s.words, w)
		}
	}
	s.wordsAt, s.wordsMax = len(s.tokens), max
	return s.words
}
