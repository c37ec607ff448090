package binding

import (
	"fmt"
	"regexp"
	"strconv"
)

// WordDates says whether a date the customer said in words ("May 22",
// "the 22nd of May, 2024") counts as said in the form a tool takes it,
// 2024-05-22 (issue 26, lever 4). It is on; a benchmark's ablation turns
// it off before any Said is read.
var WordDates = true

var months = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
	"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
	"december": 12, "dec": 12,
}

const monthRe = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)`

// "May 22", "may 22nd, 2024"; "22 May", "the 22nd of May 2024".
var (
	monthDayRe = regexp.MustCompile(`\b` + monthRe + `\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4})\b)?`)
	dayMonthRe = regexp.MustCompile(`\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthRe + `\b\.?(?:,?\s+(\d{4})\b)?`)
	isoDateRe  = regexp.MustCompile(`\b(\d{4})-\d{2}-\d{2}\b`)
)

// wordDates returns the dates said in words in a lowercased text, in the
// order said: "2024-05-22" when the year was said, else "-05-22".
func wordDates(lower string) []string {
	type at struct {
		pos  int
		date string
	}
	var found []at
	add := func(pos int, month, day, year string) {
		d, _ := strconv.Atoi(day)
		m := months[month]
		if d < 1 || d > 31 || m == 0 {
			return
		}
		found = append(found, at{pos, year + fmt.Sprintf("-%02d-%02d", m, d)})
	}
	for _, m := range monthDayRe.FindAllStringSubmatchIndex(lower, -1) {
		add(m[0], lower[m[2]:m[3]], lower[m[4]:m[5]], sub(lower, m, 3))
	}
	for _, m := range dayMonthRe.FindAllStringSubmatchIndex(lower, -1) {
		add(m[0], lower[m[4]:m[5]], lower[m[2]:m[3]], sub(lower, m, 3))
	}
	// In the order said (the two forms' matches interleave).
	for i := 1; i < len(found); i++ {
		for j := i; j > 0 && found[j].pos < found[j-1].pos; j-- {
			found[j], found[j-1] = found[j-1], found[j]
		}
	}
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.date
	}
	return out
}

// sub returns submatch k of m in s, or "".
func sub(s string, m []int, k int) string {
	if m[2*k] < 0 {
		return ""
	}
	return s[m[2*k]:m[2*k+1]]
}

// yearOf returns the latest year of a date (YYYY-MM-DD) in the results of
// s, the session's year for a date said without one ("" when no result has
// a date): a customer's date of birth is years before the flights and
// bookings a session reads.
func yearOf(s *Scope) string {
	if s == nil {
		return ""
	}
	year := ""
	for _, r := range s.Calls {
		if r == nil {
			continue
		}
		for _, m := range isoDateRe.FindAllStringSubmatch(r.Text, -1) {
			year = max(year, m[1])
		}
	}
	return year
}
