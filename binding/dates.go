package binding

import (
	"fmt"
	"strconv"
	"strings"
)

var months = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
	"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
	"december": 12, "dec": 12,
}

// wordDates returns the dates said in words among a message's tokens, in
// the order said: "2024-05-22" when the year was said, else "-05-22". A
// date is a month's name (or its abbreviation) and a day ("May 22",
// "may 22nd, 2024"), or a day and a month ("22 May", "the 22nd of May").
func wordDates(toks []string) []string {
	var out []string
	for i := 0; i < len(toks); i++ {
		m, d, n := 0, 0, 0
		if m = monthOf(toks[i]); m > 0 && i+1 < len(toks) {
			if d = dayOf(toks[i+1]); d > 0 {
				n = 2
			}
		} else if d = dayOf(toks[i]); d > 0 && i+1 < len(toks) {
			j := i + 1
			if strings.EqualFold(toks[j], "of") && j+1 < len(toks) {
				j++
			}
			if m = monthOf(toks[j]); m > 0 {
				n = j - i + 1
			}
		}
		if n == 0 || m == 0 {
			continue
		}
		year := ""
		if k := i + n; k < len(toks) && len(toks[k]) == 4 && isDigits(toks[k]) {
			year, n = toks[k], n+1
		}
		out = append(out, year+fmt.Sprintf("-%02d-%02d", m, d))
		i += n - 1
	}
	return out
}

// monthOf returns the month a token names (1 to 12), or 0.
func monthOf(tok string) int {
	if len(tok) < 3 || len(tok) > 10 || tok[0] < 'A' || tok[0] > 'z' {
		return 0
	}
	return months[strings.ToLower(strings.TrimSuffix(tok, "."))]
}

// dayOf returns the day of the month a token says ("22", "22nd"), or 0.
func dayOf(tok string) int {
	n := 0
	for n < len(tok) && tok[n] >= '0' && tok[n] <= '9' {
		n++
	}
	if n == 0 || n > 2 {
		return 0
	}
	switch strings.ToLower(tok[n:]) {
	case "", "st", "nd", "rd", "th":
	default:
		return 0
	}
	d, _ := strconv.Atoi(tok[:n])
	if d < 1 || d > 31 {
		return 0
	}
	return d
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
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
		if r != nil {
			year = max(year, r.year())
		}
	}
	return year
}

// year returns the latest year of a date in the result's text, found once.
func (r *Result) year() string {
	if !r.yearDone {
		r.yearDone = true
		t := r.Text
		for i := 0; i+10 <= len(t); i++ {
			if t[i] >= '0' && t[i] <= '9' && (i == 0 || t[i-1] < '0' || t[i-1] > '9') && isDate(t[i:]) &&
				(i+10 == len(t) || t[i+10] < '0' || t[i+10] > '9') {
				r.yr = max(r.yr, t[i:i+4])
				i += 9
			}
		}
	}
	return r.yr
}
