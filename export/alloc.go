package export

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// poolAllocator is an Arrow allocator that keeps the buffers freed to it
// for the next batch of rows, in size classes of powers of two: an export
// builds the same columns batch after batch, and with Go's allocator every
// batch's buffers were new memory (more than a third of what an export
// allocated), cleared by the runtime and collected by it. What a buffer
// hands out is zeroed, as Go's allocator's is (the bytes Allocate returns,
// and those a Reallocate adds within the buffer's capacity), and 64-byte
// aligned as Arrow's own are.
type poolAllocator struct {
	classes [maxClass + 1]sync.Pool
}

const (
	minClass = 6  // 64 B
	maxClass = 26 // 64 MiB; larger buffers go to Go's allocator and back
	align    = 64
)

func newPoolAllocator() *poolAllocator { return &poolAllocator{} }

// newAllocator returns the allocator of one export (a variable, so that
// BenchmarkParquet can measure Go's allocator beside it in one process).
var newAllocator = func() memory.Allocator { return newPoolAllocator() }

// class is the size class of n bytes: the smallest power of two ≥ n.
func class(n int) int {
	if n <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(n - 1))
}

func (a *poolAllocator) Allocate(size int) []byte {
	c := class(size)
	if c > maxClass {
		return aligned(size, size)
	}
	if p, ok := a.classes[c].Get().(*[]byte); ok {
		b := (*p)[:size]
		clear(b)
		return b
	}
	return aligned(size, 1<<c)
}

func (a *poolAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free keeps b for a later Allocate of its class. A buffer this allocator
// did not hand out (its capacity is not a class's) is left to the GC.
func (a *poolAllocator) Free(b []byte) {
	c := cap(b)
	if c < 1<<minClass || c&(c-1) != 0 || c > 1<<maxClass || uintptr(unsafe.Pointer(unsafe.SliceData(b[:1])))%align != 0 {
		return
	}
	b = b[:0]
	a.classes[bits.Len(uint(c))-1].Put(&b)
}

// aligned returns a zeroed buffer of len size and capacity c, at an address
// that is a multiple of align.
func aligned(size, c int) []byte {
	buf := make([]byte, c+align)
	shift := 0
	if r := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) % align; r != 0 {
		shift = align - int(r)
	}
	return buf[shift : shift+size : shift+c]
}

var _ memory.Allocator = (*poolAllocator)(nil)
