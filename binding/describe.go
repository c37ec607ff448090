package binding

import (
	"strings"
	"unicode"
)

// How well the customer described an element: not, by the last word of a
// value of several words, or by a whole value.
const (
	describedNot = iota
	describedByWord
	describedWhole
)

// Describes reports whether the customer described el, an element of a
// list: one of its string members (or el itself, a string) was said as a
// whole token, or, for a value of several words, its last word ("the lamp"
// describes an item named "Desk Lamp"). Values of fewer than three
// characters, and last words of fewer than four letters, describe nothing.
// [said~] keeps, of a list's elements, those described best: by a whole
// value when any is, else by a last word.
func (s *Said) Describes(el any) bool { return s.described(el) != describedNot }

// described returns how well the customer described el.
func (s *Said) described(el any) int {
	if s == nil || len(s.texts) == 0 {
		return describedNot
	}
	switch x := el.(type) {
	case string:
		return s.describedText(x)
	case map[string]any:
		best := describedNot
		for _, m := range x {
			if v, ok := m.(string); ok {
				if d := s.describedText(v); d > best {
					best = d
					if best == describedWhole {
						break
					}
				}
			}
		}
		return best
	}
	return describedNot
}

// describedText returns whether a value was said whole, or, of several
// words, by its last.
func (s *Said) describedText(v string) int {
	v = strings.TrimSpace(v)
	if len(v) < 3 {
		return describedNot
	}
	if s.named(v) {
		return describedWhole
	}
	i := strings.LastIndexFunc(v, unicode.IsSpace)
	if i < 0 {
		return describedNot
	}
	w := v[i+1:]
	letters := 0
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return describedNot
		}
		letters++
	}
	if letters >= 4 && s.named(w) {
		return describedByWord
	}
	return describedNot
}

// describedBest returns, of each element's description (described), the
// best.
func describedBest(ds []int) int {
	best := describedNot
	for _, d := range ds {
		best = max(best, d)
	}
	return best
}
