//go:build amd64 && !purego

package canonical

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 classifier when the processor and the operating
// system support it (x/sys/cpu checks both); SSE2 is always there.
var useAVX2 = cpu.X86.HasAVX2

// blockMasks classifies the 64 bytes of p with AVX2 or SSE2.
func blockMasks(p *[64]byte) masks {
	var q, b, l, o uint64
	if useAVX2 {
		q, b, l, o = blockMasksAVX2(p)
	} else {
		q, b, l, o = blockMasksSSE2(p)
	}
	return masks{quote: q, backslash: b, letter: l, other: o}
}

// blockMasksSSE2 returns bit j set for every p[j] that is '"', that is
// '\\', that is one of b f n r t, and that is below 0x20 or above 0x7f.
//
//go:noescape
func blockMasksSSE2(p *[64]byte) (quote, backslash, letter, other uint64)

// blockMasksAVX2 is blockMasksSSE2 with AVX2 (32 bytes per instruction).
//
//go:noescape
func blockMasksAVX2(p *[64]byte) (quote, backslash, letter, other uint64)

// prefetchLines asks the processor to load the cache lines of p[:n]
// without waiting for them.
//
//go:noescape
func prefetchLines(p *byte, n int)
