package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinKeyBytes is the shortest key a Pseudonymizer accepts.
const MinKeyBytes = 16

// Pseudonymizer maps values to pseudonyms of the same shape. The map is a
// function of the key and the value alone, so the same value gets the same
// pseudonym in every session, file and run with that key.
//
// A value is cut into runs: letters, digits, and everything else. Other
// characters (spaces, punctuation, '@', '.', '_', '#', '-') are kept, so an
// email stays an email, a phone number keeps its separators and an id its
// underscores. Each run of ASCII letters or of digits is replaced by a run of
// the same length and class through a keyed permutation (a Feistel network
// whose round function is HMAC-SHA256 under the key, format-preserving
// encryption in the manner of NIST SP 800-38G's FF1): letters stay letters,
// with the original's pattern of capitals; digits stay digits, and a run that
// does not start with 0 does not start with 0 after, so numbers stay numbers.
// Because each run's map is a bijection, two values are equal after exactly
// when they were equal before: bindings match the same calls, and no two
// values merge.
//
// Kept as they are: words of the vocabulary (Keep: English function words,
// top-level domains, the words of tool and argument names), so an id keeps
// its prefix (user_15 → user_83, when "user" is a word of a tool's
// arguments), and an id's type tag, one or two capitals that start a word and
// are followed by a digit (#W15a → #W71c). Runs of non-ASCII letters are
// replaced by ASCII letters of the same count through a keyed hash (not a
// bijection; collisions are as likely as 26^-n).
//
// A Pseudonymizer caches what it has mapped and is not safe for concurrent
// use.
type Pseudonymizer struct {
	mac   hash.Hash
	keep  map[string]bool
	cache map[string]pseudonym
	runs  map[string]string // runs of letters ("a"+run) and digits ("d"+run) mapped
	sum   []byte
	buf   []byte
	// mapped is set by appendString when it maps a run.
	mapped bool
}

// NewPseudonymizer returns a Pseudonymizer under key that keeps the words of
// keep (lowercase) besides its built-in vocabulary.
func NewPseudonymizer(key []byte, keep []string) *Pseudonymizer {
	p := &Pseudonymizer{
		mac:   hmac.New(sha256.New, key),
		keep:  map[string]bool{},
		cache: map[string]pseudonym{},
		runs:  map[string]string{},
	}
	for _, w := range builtinKeep {
		p.keep[w] = true
	}
	for _, w := range keep {
		p.keep[strings.ToLower(w)] = true
	}
	return p
}

// Kept reports whether word is kept as it is.
func (p *Pseudonymizer) Kept(word string) bool { return p.keep[strings.ToLower(word)] }

type pseudonym struct {
	s      string
	mapped bool
}

// String returns the pseudonym of s.
func (p *Pseudonymizer) String(s string) string {
	ps, _ := p.Mapped(s)
	return ps
}

// Mapped returns the pseudonym of s, and whether any of its runs was mapped
// (false when s is only kept words, tags and punctuation). A mapped value
// may, rarely, come out as it went in: a permutation has fixed points, as
// likely as one in 10 for a single digit and one in 26^n for n letters.
func (p *Pseudonymizer) Mapped(s string) (string, bool) {
	if s == "" {
		return s, false
	}
	if v, ok := p.cache[s]; ok {
		return v.s, v.mapped
	}
	p.mapped = false
	out := string(p.appendString(nil, s, false))
	if len(p.cache) < 1<<20 {
		p.cache[s] = pseudonym{out, p.mapped}
	}
	return out, p.mapped
}

// Number returns the pseudonym of a JSON number as written: its digit runs
// mapped as String maps them, its sign, point and exponent kept, so the
// result is a JSON number with as many digits.
func (p *Pseudonymizer) Number(num string) string {
	return string(p.appendString(nil, num, true))
}

// appendString appends the pseudonym of s to dst. In a number, the exponent
// marker is kept.
func (p *Pseudonymizer) appendString(dst []byte, s string, number bool) []byte {
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case isDigit(c):
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			dst = p.appendRun(dst, 'd', s[i:j])
			i = j
		case number && (c == 'e' || c == 'E'):
			dst = append(dst, c)
			i++
		case c < utf8.RuneSelf && !isLetter(c):
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if c >= utf8.RuneSelf && !unicode.IsLetter(r) {
				dst = append(dst, s[i:i+size]...)
				i += size
				continue
			}
			j := i
			ascii := true
			for j < len(s) {
				if s[j] < utf8.RuneSelf {
					if !isLetter(s[j]) {
						break
					}
					j++
					continue
				}
				r, size := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsLetter(r) {
					break
				}
				ascii = false
				j += size
			}
			word := s[i:j]
			switch {
			case p.Kept(word):
				dst = append(dst, word...)
			case ascii && isTag(s, i, j):
				dst = append(dst, word...)
			case ascii:
				dst = p.appendRun(dst, 'a', word)
			default:
				p.mapped = true
				dst = p.appendHashedWord(dst, word)
			}
			i = j
		}
	}
	return dst
}

// isTag reports whether s[i:j], ASCII letters, is an id's type tag: one or
// two capitals at the start of a word, followed by a digit.
func isTag(s string, i, j int) bool {
	if j-i > 2 || j >= len(s) || !isDigit(s[j]) {
		return false
	}
	if i > 0 && (isLetter(s[i-1]) || isDigit(s[i-1]) || s[i-1] >= utf8.RuneSelf) {
		return false
	}
	for k := i; k < j; k++ {
		if s[k] < 'A' || s[k] > 'Z' {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// appendRun appends the pseudonym of a run of digits (class 'd') or ASCII
// letters ('a'), from the cache of runs when it was mapped before.
func (p *Pseudonymizer) appendRun(dst []byte, class byte, run string) []byte {
	p.mapped = true
	var kb [32]byte
	key := append(append(kb[:0], class), run...)
	if v, ok := p.runs[string(key)]; ok {
		return append(dst, v...)
	}
	start := len(dst)
	if class == 'd' {
		dst = p.appendDigits(dst, run)
	} else {
		dst = p.appendLetters(dst, run)
	}
	if len(p.runs) < 1<<20 {
		p.runs[string(key)] = string(dst[start:])
	}
	return dst
}

// chunk is the longest run mapped as one numeral: 26^12 and 10^12 fit in a
// uint64 with room for the sum of two of them. Longer runs are mapped chunk
// by chunk, each under a tweak of its own.
const chunk = 12

// appendDigits maps a run of digits. A run that starts with 0 keeps its
// leading 0 and maps the rest; one that does not starts with 1-9 after.
func (p *Pseudonymizer) appendDigits(dst []byte, run string) []byte {
	if len(run) > 1 && run[0] == '0' {
		dst = append(dst, '0')
		return p.appendDigitsFrom(dst, run[1:], 'z')
	}
	return p.appendDigitsFrom(dst, run, 'd')
}

func (p *Pseudonymizer) appendDigitsFrom(dst []byte, run string, class byte) []byte {
	for c := 0; c*chunk < len(run); c++ {
		part := run[c*chunk : min(len(run), (c+1)*chunk)]
		radix := p.buf[:0]
		digits := make([]uint64, len(part))
		for k := range part {
			r := byte(10)
			d := uint64(part[k] - '0')
			if k == 0 && c == 0 && class == 'd' && len(run) > 1 {
				r, d = 9, d-1 // no leading zero
			}
			radix = append(radix, r)
			digits[k] = d
		}
		p.buf = radix
		p.permute(digits, radix, tweak(class, len(run), c))
		for k, d := range digits {
			if radix[k] == 9 {
				d++
			}
			dst = append(dst, byte('0'+d))
		}
	}
	return dst
}

// appendLetters maps a run of ASCII letters, ignoring case, and gives the
// pseudonym the run's capitals.
func (p *Pseudonymizer) appendLetters(dst []byte, word string) []byte {
	for c := 0; c*chunk < len(word); c++ {
		part := word[c*chunk : min(len(word), (c+1)*chunk)]
		radix := p.buf[:0]
		digits := make([]uint64, len(part))
		for k := range part {
			radix = append(radix, 26)
			digits[k] = uint64(part[k]|0x20) - 'a'
		}
		p.buf = radix
		p.permute(digits, radix, tweak('a', len(word), c))
		for k, d := range digits {
			b := byte('a' + d)
			if part[k] <= 'Z' {
				b -= 0x20
			}
			dst = append(dst, b)
		}
	}
	return dst
}

// appendHashedWord replaces a word with non-ASCII letters by as many ASCII
// letters, drawn from the keyed hash of its lowercase form.
func (p *Pseudonymizer) appendHashedWord(dst []byte, word string) []byte {
	p.mac.Reset()
	p.mac.Write([]byte("u"))
	p.mac.Write([]byte(strings.ToLower(word)))
	sum := p.mac.Sum(p.sum[:0])
	p.sum = sum
	k := 0
	for _, r := range word {
		b := byte('a' + sum[k%len(sum)]%26)
		if unicode.IsUpper(r) {
			b -= 0x20
		}
		dst = append(dst, b)
		k++
		if k%len(sum) == 0 {
			p.mac.Reset()
			p.mac.Write(sum)
			sum = p.mac.Sum(sum[:0])
		}
	}
	return dst
}

func tweak(class byte, n, chunk int) uint64 {
	return uint64(class)<<56 | uint64(n&0xffffff)<<24 | uint64(chunk&0xffffff)
}

// rounds is the number of Feistel rounds; FF1 uses 10.
const rounds = 10

// permute applies the keyed permutation to a numeral (digits[k] < radix[k])
// in place. The numeral is split into two halves, A and B, read as mixed-radix
// integers; each round adds the keyed hash of one half to the other, modulo
// its size, which is invertible whatever the sizes, so the whole is a
// bijection of the numerals of that format (one half may be empty: a single
// position is then a keyed shift).
func (p *Pseudonymizer) permute(digits []uint64, radix []byte, tw uint64) {
	h := (len(digits) + 1) / 2
	na, a := value(digits[:h], radix[:h])
	nb, b := value(digits[h:], radix[h:])
	for r := range rounds {
		if r%2 == 0 {
			a = (a + p.round(tw, r, b)%na) % na
		} else if nb > 1 {
			b = (b + p.round(tw, r, a)%nb) % nb
		}
	}
	spread(digits[:h], radix[:h], a)
	spread(digits[h:], radix[h:], b)
}

func (p *Pseudonymizer) round(tw uint64, r int, x uint64) uint64 {
	var in [17]byte
	binary.BigEndian.PutUint64(in[:8], tw)
	in[8] = byte(r)
	binary.BigEndian.PutUint64(in[9:], x)
	p.mac.Reset()
	p.mac.Write(in[:])
	p.sum = p.mac.Sum(p.sum[:0])
	return binary.BigEndian.Uint64(p.sum)
}

// value reads a mixed-radix numeral, most significant first, and returns
// the size of its domain and its value.
func value(digits []uint64, radix []byte) (n, v uint64) {
	n = 1
	for k, d := range digits {
		n *= uint64(radix[k])
		v = v*uint64(radix[k]) + d
	}
	return n, v
}

func spread(digits []uint64, radix []byte, v uint64) {
	for k := len(digits) - 1; k >= 0; k-- {
		digits[k] = v % uint64(radix[k])
		v /= uint64(radix[k])
	}
}

// builtinKeep are the words kept everywhere: English function words, so
// the conversation keeps its grammar, and top-level domains, so an email's
// domain keeps its ending. Words that are also given names (will, may,
// june) are not among them.
var builtinKeep = strings.Fields(`
a an the and or but if then else so of to in on at by for from with without
about as into onto over under after before between through during up down out
off is are was were be been being am do does did done have has had having
i me my mine you your yours he him his she her hers it its we us our they them
their this that these those there here what which who whom whose when where why
how all any both each few more most other some such no not nor only own same
than too very can could should would must shall might just also please thanks
thank yes ok okay hi hello sure sorry would like want need help order orders
id ids number email address name phone user account item items payment method
status total price amount reason date time
s t m d ll re ve
com org net edu gov io co uk de fr
`)
