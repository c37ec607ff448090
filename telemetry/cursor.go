package telemetry

import "bytes"

// cursor walks a JSON object by its members' boundaries, as jsontext's
// Cursor does, checking nothing (on bytes that are not JSON it may panic;
// the session recovers), but it skips a string with bytes.IndexByte: a
// 64 KiB argument or result, most of a large line, is passed at the speed
// of memchr rather than eight bytes a step, which made reading a 64 KiB
// call and its answer cost more than the span.
type cursor struct {
	b []byte
	i int
}

func (c *cursor) space() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\r', '\n':
			c.i++
		default:
			return
		}
	}
}

// enter moves past the opener of the container at the cursor, and reports
// whether there is one; when there is not, the cursor stays.
func (c *cursor) enter(open byte) bool {
	c.space()
	if c.i >= len(c.b) || c.b[c.i] != open {
		return false
	}
	c.i++
	return true
}

// object enters the object at the cursor and reports whether there is
// one; a value that is not an object is skipped.
func (c *cursor) object() bool {
	if c.enter('{') {
		return true
	}
	c.value()
	return false
}

// more moves to the next member or element, past the comma before it, and
// reports whether there is one; at the closer it moves past it and reports
// false.
func (c *cursor) more(closer byte) bool {
	c.space()
	if c.b[c.i] == closer {
		c.i++
		return false
	}
	if c.b[c.i] == ',' {
		c.i++
		c.space()
	}
	return true
}

// name returns the member name's token (quotes included) and moves past
// it and its colon.
func (c *cursor) name() []byte {
	c.space()
	start := c.i
	c.skipString()
	tok := c.b[start:c.i]
	c.space()
	c.i++ // ':'
	return tok
}

// value returns the exact bytes of the value at the cursor and moves past it.
func (c *cursor) value() []byte {
	c.space()
	start := c.i
	c.skipValue()
	return c.b[start:c.i]
}

// skipString moves past the string at the cursor: its end is the first
// quote after an even run of backslashes.
func (c *cursor) skipString() {
	c.i++ // the opening quote
	for {
		j := bytes.IndexByte(c.b[c.i:], '"')
		if j < 0 {
			c.i = len(c.b)
			return
		}
		q := c.i + j
		k := q
		for k > c.i && c.b[k-1] == '\\' {
			k--
		}
		c.i = q + 1
		if (q-k)%2 == 0 {
			return
		}
	}
}

func (c *cursor) skipValue() {
	if c.i >= len(c.b) {
		return
	}
	switch c.b[c.i] {
	case '"':
		c.skipString()
	case '{', '[':
		depth := 0
		for c.i < len(c.b) {
			switch c.b[c.i] {
			case '"':
				c.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					c.i++
					return
				}
			}
			c.i++
		}
	default: // number, true, false, null
		for c.i < len(c.b) {
			switch c.b[c.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return
			}
			c.i++
		}
	}
}
