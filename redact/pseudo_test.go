package redact

import (
	"fmt"
	"regexp"
	"testing"
)

var testKey = []byte("0123456789abcdef-test-key")

func TestShapes(t *testing.T) {
	p := NewPseudonymizer(testKey, []string{"user"})
	cases := []struct {
		in   string
		want *regexp.Regexp
	}{
		{"user_15", regexp.MustCompile(`^user_[1-9][0-9]$`)},
		{"#W15a", regexp.MustCompile(`^#W[1-9][0-9][a-z]$`)},
		{"isabella.johansson9391@example.com", regexp.MustCompile(`^[a-z]{8}\.[a-z]{9}[1-9][0-9]{3}@[a-z]{7}\.com$`)},
		{"Isabella Johansson", regexp.MustCompile(`^[A-Z][a-z]{7} [A-Z][a-z]{8}$`)},
		{"313 Chestnut Street", regexp.MustCompile(`^[1-9][0-9]{2} [A-Z][a-z]{7} [A-Z][a-z]{5}$`)},
		{"+1 (555) 010-2030", regexp.MustCompile(`^\+[0-9] \([1-9][0-9]{2}\) 0[0-9]{2}-[1-9][0-9]{3}$`)},
		{"02139", regexp.MustCompile(`^0[0-9]{4}$`)},
		{"H8Q05L", regexp.MustCompile(`^H[0-9][A-Z]0[0-9][A-Z]$`)},
		{"the order of the day", regexp.MustCompile(`^the order of the [a-z]{3}$`)},
		{"Zoë", regexp.MustCompile(`^[A-Z][a-z]{2}$`)},
	}
	for _, c := range cases {
		got := p.String(c.in)
		if !c.want.MatchString(got) || got == c.in {
			t.Errorf("String(%q) = %q, want %v", c.in, got, c.want)
		}
		if again := NewPseudonymizer(testKey, []string{"user"}).String(c.in); again != got {
			t.Errorf("String(%q) is %q, then %q with the same key", c.in, got, again)
		}
	}
	for _, n := range []string{"0", "7", "-12.5", "200.8", "1e10", "12345678901234567890123"} {
		got := p.Number(n)
		if !regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`).MatchString(got) || len(got) != len(n) {
			t.Errorf("Number(%s) = %s: not a number of the same length", n, got)
		}
	}
	if NewPseudonymizer([]byte("another key, 16 bytes+"), nil).String("Isabella") == p.String("Isabella") {
		t.Error("two keys give the same pseudonym")
	}
}

// TestBijection checks that no two values of a small domain share a
// pseudonym, so that redaction neither merges nor splits values.
func TestBijection(t *testing.T) {
	p := NewPseudonymizer(testKey, nil)
	for _, n := range []int{1, 2, 3} {
		seen := map[string]string{}
		max := 1
		for range n {
			max *= 10
		}
		for i := range max {
			s := fmt.Sprintf("%0*d", n, i)
			got := p.String(s)
			if prev, ok := seen[got]; ok {
				t.Fatalf("%s and %s both map to %s", prev, s, got)
			}
			seen[got] = s
		}
	}
	seen := map[string]string{}
	for a := 'a'; a <= 'z'; a++ {
		for b := 'a'; b <= 'z'; b++ {
			s := "x" + string(a) + string(b)
			got := p.String(s)
			if prev, ok := seen[got]; ok {
				t.Fatalf("%s and %s both map to %s", prev, s, got)
			}
			seen[got] = s
		}
	}
}

func TestKind(t *testing.T) {
	for in, want := range map[string]string{
		"a.b@example.com":             KindEmail,
		"+1 555 010 2030":             KindPhone,
		"32286":                       KindDigits,
		"313 Chestnut Street":         KindAddress,
		"user_15":                     KindID,
		"Isabella Johansson":          KindName,
		"Houston":                     KindWord,
		"I want to return the order.": KindText,
	} {
		if got := Kind(in); got != want {
			t.Errorf("Kind(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestKeys(t *testing.T) {
	p := NewPseudonymizer(testKey, nil)
	in := `{"address1": "313 Chestnut Street", "paypal_3024827": {"id": "paypal_3024827"}, "2024-05-01": [1, true, null]}`
	got := string(p.JSON(nil, []byte(in)))
	for _, want := range []string{`"address1": "`, `{"id": "`, `[`, `, true, null]`} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(got) {
			t.Errorf("JSON(%s) = %s: want %s kept", in, got, want)
		}
	}
	for _, gone := range []string{"Chestnut", "3024827", "2024-05-01"} {
		if regexp.MustCompile(gone).MatchString(got) {
			t.Errorf("JSON(%s) = %s: %s kept", in, got, gone)
		}
	}
	id := p.String("paypal_3024827")
	if !regexp.MustCompile(`"` + id + `": \{"id": "` + id + `"\}`).MatchString(got) {
		t.Errorf("JSON(%s) = %s: the key and the value map apart (%s)", in, got, id)
	}
}
