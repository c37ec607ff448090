package redact

import (
	"strings"
	"unicode"
)

// The kinds of value the manifest counts. The map a value gets does not
// depend on its kind (every kind is mapped run by run, see Pseudonymizer);
// the kind only says what was replaced.
const (
	KindEmail   = "email"   // local@domain.tld
	KindPhone   = "phone"   // 7 or more digits with + ( ) - . or spaces
	KindDigits  = "digits"  // only digits: zips, product and tracking numbers
	KindNumber  = "number"  // a JSON number
	KindAddress = "address" // a number, then words: "313 Chestnut Street"
	KindID      = "id"      // letters and digits in one word: user_15, #W15a
	KindName    = "name"    // two to four capitalized words: "Isabella Johansson"
	KindWord    = "word"    // one word of letters: a first name, a city, a status
	KindText    = "text"    // anything else with spaces: the conversation, prose results
)

// Kind says what kind of value s looks like.
func Kind(s string) string {
	var letters, digits, spaces, other int
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case unicode.IsLetter(r):
			letters++
		case unicode.IsSpace(r):
			spaces++
		default:
			other++
		}
	}
	if at := strings.IndexByte(s, '@'); at > 0 && spaces == 0 && strings.Contains(s[at:], ".") {
		return KindEmail
	}
	if letters == 0 && digits > 0 {
		switch {
		case spaces == 0 && other == 0:
			return KindDigits
		case digits >= 7 && strings.Trim(s, "0123456789+()-. ") == "":
			return KindPhone
		case spaces == 0:
			return KindID
		}
		return KindText
	}
	if spaces == 0 {
		if digits > 0 || other > 0 {
			return KindID
		}
		return KindWord
	}
	words := strings.Fields(s)
	if digits > 0 && len(words) <= 8 && strings.Trim(words[0], "0123456789") == "" && !strings.ContainsAny(s, ".!?\n") {
		return KindAddress
	}
	if len(words) <= 4 && digits == 0 && other == 0 {
		capital := true
		for _, w := range words {
			if !unicode.IsUpper([]rune(w)[0]) {
				capital = false
			}
		}
		if capital {
			return KindName
		}
	}
	return KindText
}
