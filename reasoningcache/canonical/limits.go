package canonical

import "fmt"

// Limits bound one canonicalization pass. Every limit is part of the
// canonical scope, so changing one changes every digest computed under it.
// A zero field means the version 1 default for that field.
type Limits struct {
	// MaxBytes bounds the raw input size of the scope and the history
	// together (the sum of the lengths of every raw JSON value and string
	// the caller passes in).
	MaxBytes int64
	// MaxMessages bounds the number of history envelopes, including any
	// appended later with Extend.
	MaxMessages int
	// MaxNodes bounds the number of JSON values (objects, arrays, strings,
	// numbers, literals; object keys are not counted) in the scope and the
	// history together.
	MaxNodes int
	// MaxDepth bounds nesting: a top-level value has depth 1 and each value
	// is one deeper than its container.
	MaxDepth int
	// MaxScratch bounds the working memory charged to one JSON value (one
	// envelope, or one raw scope field): ScratchPerNode bytes per node plus
	// every byte of decoded strings and rewritten numbers.
	MaxScratch int64
}

// Version 1 default limits.
const (
	DefaultMaxBytes    = 32 << 20
	DefaultMaxMessages = 6400
	DefaultMaxNodes    = 2_000_000
	DefaultMaxDepth    = 64
	DefaultMaxScratch  = 16 << 20
)

// ScratchPerNode is the scratch charge of one parsed JSON value. It is a
// fixed part of the format (not the in-memory size of the current
// implementation) so that limit decisions never depend on the build.
const ScratchPerNode = 48

// hard ceilings that keep internal offsets (uint32) and recursion safe.
const (
	ceilBytes = 1<<32 - 1
	ceilDepth = 1024
)

// DefaultLimits returns the version 1 limits: 32 MiB of scope and history,
// 6,400 messages, 2,000,000 JSON nodes, depth 64 and 16 MiB of scratch.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:    DefaultMaxBytes,
		MaxMessages: DefaultMaxMessages,
		MaxNodes:    DefaultMaxNodes,
		MaxDepth:    DefaultMaxDepth,
		MaxScratch:  DefaultMaxScratch,
	}
}

// Effective returns l with zero fields replaced by the defaults, or an error
// if a field is negative or beyond what the format can address.
func (l Limits) Effective() (Limits, error) {
	d := DefaultLimits()
	if l.MaxBytes == 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxMessages == 0 {
		l.MaxMessages = d.MaxMessages
	}
	if l.MaxNodes == 0 {
		l.MaxNodes = d.MaxNodes
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxScratch == 0 {
		l.MaxScratch = d.MaxScratch
	}
	switch {
	case l.MaxBytes < 0 || l.MaxBytes > ceilBytes:
		return l, fmt.Errorf("canonical: limits: MaxBytes %d out of range [1, %d]", l.MaxBytes, int64(ceilBytes))
	case l.MaxMessages < 0:
		return l, fmt.Errorf("canonical: limits: MaxMessages %d is negative", l.MaxMessages)
	case l.MaxNodes < 0:
		return l, fmt.Errorf("canonical: limits: MaxNodes %d is negative", l.MaxNodes)
	case l.MaxDepth < 0 || l.MaxDepth > ceilDepth:
		return l, fmt.Errorf("canonical: limits: MaxDepth %d out of range [1, %d]", l.MaxDepth, ceilDepth)
	case l.MaxScratch < 0 || l.MaxScratch > ceilBytes:
		return l, fmt.Errorf("canonical: limits: MaxScratch %d out of range [1, %d]", l.MaxScratch, int64(ceilBytes))
	}
	return l, nil
}
