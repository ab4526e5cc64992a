// Package bufpool keeps large byte buffers for reuse. A relayed request of
// a long history needs a few buffers of about its size (the client body,
// the translated input items); allocating them afresh for every request
// costs the zeroing of megabytes of fresh memory and, above all, garbage
// collections, whose marking competes with the relay for the CPU in
// proportion to the bytes allocated. Buffers that a request gives back are
// handed to the next one instead.
//
// The pool is a set of sync.Pools by size class, so it holds nothing across
// two garbage collections that nobody asked for: memory it keeps is
// bounded by what was recently in use. Sizes below MinSize are not pooled
// (they are cheap to allocate).
//
// Giving a buffer back is a promise that nothing references any byte of
// it any more: the next Get may hand it to another request, which
// overwrites it. Callers that cannot be sure simply do not give it back;
// the garbage collector then frees it as usual.
package bufpool

import (
	"math/bits"
	"sync"
)

// MinSize is the smallest capacity the pool deals in.
const MinSize = 128 << 10

// classesPerDoubling splits each power of two into this many size classes,
// so that a buffer of a class is at most 1/classesPerDoubling larger than
// asked for.
const classesPerDoubling = 8

// maxShift bounds the pooled sizes to below 1<<maxShift bytes.
const maxShift = 31

var pools [(maxShift + 1) * classesPerDoubling]sync.Pool

// classUp returns the smallest class whose size is at least n, with that
// size; ok is false when n is not pooled.
func classUp(n int) (class, size int, ok bool) {
	if n < MinSize || n >= 1<<maxShift {
		return 0, 0, false
	}
	e := bits.Len(uint(n)) - 1 // 1<<e <= n < 1<<(e+1)
	step := 1 << e / classesPerDoubling
	j := (n - 1<<e + step - 1) / step // 0..classesPerDoubling
	if j == classesPerDoubling {
		e, j = e+1, 0
		step = 1 << e / classesPerDoubling
	}
	return e*classesPerDoubling + j, 1<<e + j*step, e < maxShift
}

// classDown returns the largest class whose size is at most c, the
// capacity of a buffer given back; ok is false when c is not pooled.
func classDown(c int) (class int, ok bool) {
	if c < MinSize || c >= 1<<maxShift {
		return 0, false
	}
	e := bits.Len(uint(c)) - 1
	step := 1 << e / classesPerDoubling
	return e*classesPerDoubling + (c-1<<e)/step, true
}

// Get returns an empty buffer with a capacity of at least n: a pooled one
// when there is one of n's size class, else a new one of the class's size
// (of exactly n when n is not pooled). Its bytes are unspecified.
func Get(n int) []byte {
	class, size, ok := classUp(n)
	if !ok {
		return make([]byte, 0, n)
	}
	if p, _ := pools[class].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

// Put gives b's whole backing array back for reuse. Nothing may reference
// any byte of it afterwards. A buffer too small to pool is left to the
// garbage collector.
func Put(b []byte) {
	class, ok := classDown(cap(b))
	if !ok {
		return
	}
	b = b[:0]
	pools[class].Put(&b)
}
