package binding

import (
	"regexp"
	"sort"
	"strings"
)

// A position the customer said: an ordinal (0 for "the first one"), or the
// newest or oldest element.
type position struct {
	ordinal int
	newest  bool
	oldest  bool
}

// positionRe finds an element picked by its position: "the second one",
// "my most recent reservation", "the last order", "my earliest trip". The
// ordinal must come before a word that names an element, so that "my first
// name" or "first class" is not one.
var positionRe = regexp.MustCompile(`\b(?:the|my|our)\s+(first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th|last|latest|newest|most\s+recent|recent|earliest|oldest)\s+(?:(?:upcoming|booked|flight|airline|trip|placed|pending)\s+)?(one|reservations?|orders?|bookings?|trips?|flights?|purchases?)\b`)

var ordinals = map[string]int{
	"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2,
	"fourth": 3, "4th": 3, "fifth": 4, "5th": 4,
}

// position returns the latest position the customer said, if any. Each
// message is read once: a later one that says a position replaces it.
func (s *Said) position() (position, bool) {
	if s == nil || len(s.texts) == 0 {
		return position{}, false
	}
	for ; s.posAt < len(s.texts); s.posAt++ {
		t := strings.ToLower(s.texts[s.posAt])
		if !mayPosition(t) {
			continue
		}
		m := positionRe.FindAllStringSubmatch(t, -1)
		if len(m) == 0 {
			continue
		}
		switch w := strings.Join(strings.Fields(m[len(m)-1][1]), " "); w {
		case "last", "latest", "newest", "most recent", "recent":
			s.pos = position{newest: true}
		case "earliest", "oldest":
			s.pos = position{oldest: true}
		default:
			s.pos = position{ordinal: ordinals[w]}
		}
		s.posOK = true
	}
	return s.pos, s.posOK
}

// mayPosition is a quick test that a lowercased text may say a position:
// every phrase positionRe finds has one of these.
func mayPosition(t string) bool {
	for _, w := range positionWords {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

var positionWords = []string{"first", "second", "third", "fourth", "fifth", "1st", "2nd", "3rd", "4th", "5th", "last", "latest", "newest", "recent", "earliest", "oldest"}

// Pick returns the index of the element of list the customer picked by its
// position, as [said#] reads it: the latest ordinal said ("the second
// one") counts in the list's order; "most recent", "latest" or "last" is
// the element with the latest date when the elements are objects with a
// date member (a string that begins with YYYY-MM-DD; the first such member
// by name), else the list's last element; "earliest" or "oldest" likewise
// the first. It returns false when the customer said no position, or one
// the list does not have.
func (s *Said) Pick(list []any) (int, bool) {
	p, ok := s.position()
	if !ok || len(list) == 0 {
		return 0, false
	}
	if !p.newest && !p.oldest {
		return p.ordinal, p.ordinal < len(list)
	}
	if member := dateMember(list); member != "" {
		best := -1
		var bestDate string
		for i, el := range list {
			obj, _ := el.(map[string]any)
			d, _ := obj[member].(string)
			if !isDate(d) {
				continue
			}
			if best < 0 || p.newest && d > bestDate || p.oldest && d < bestDate {
				best, bestDate = i, d
			}
		}
		if best >= 0 {
			return best, true
		}
	}
	if p.newest {
		return len(list) - 1, true
	}
	return 0, true
}

// dateMember returns the first member (by name) of list's first object
// element whose value is a date, or "".
func dateMember(list []any) string {
	obj, ok := list[0].(map[string]any)
	if !ok {
		return ""
	}
	keys := make([]string, 0, len(obj))
	for k, v := range obj {
		if d, ok := v.(string); ok && isDate(d) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return keys[0]
}

// isDate reports whether s begins with a date, YYYY-MM-DD.
func isDate(s string) bool {
	if len(s) < 10 {
		return false
	}
	for i := range 10 {
		c := s[i]
		if i == 4 || i == 7 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
