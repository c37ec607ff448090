package mcplog

import (
	"math/bits"
	"sync"
)

// Lines handed to a Writer are recycled once written, so that a busy proxy
// makes little garbage: fewer collections, and a smaller peak RSS.
const maxPooled = 1 << 20

var pools [21]sync.Pool // by bits.Len(cap-1), up to maxPooled

// Borrow returns a slice of length n for a line that will be handed to
// Writer.Record, which gives it back once written. Its capacity is n rounded
// up to a power of two.
func Borrow(n int) []byte {
	if n == 0 || n > maxPooled {
		return make([]byte, n)
	}
	class := bits.Len(uint(n - 1))
	if b, ok := pools[class].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<class)
}

// recycle keeps b for a later Borrow when its capacity is one Borrow makes.
func recycle(b []byte) {
	c := cap(b)
	if c == 0 || c > maxPooled || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	pools[bits.Len(uint(c-1))].Put(&b)
}
