//go:build amd64 && !purego

package canonical

// blockMasks classifies the 64 bytes of p with SSE2, which every amd64
// processor has.
func blockMasks(p *[64]byte) masks {
	q, b, l, o := blockMasksSSE2(p)
	return masks{quote: q, backslash: b, letter: l, other: o}
}

// blockMasksSSE2 returns bit j set for every p[j] that is '"', that is
// '\\', that is one of b f n r t, and that is below 0x20 or above 0x7f.
//
//go:noescape
func blockMasksSSE2(p *[64]byte) (quote, backslash, letter, other uint64)
