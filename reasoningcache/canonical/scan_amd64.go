//go:build amd64 && !purego

package canonical

// blockMask returns bit j set for every special byte p[j] ('"', '\\',
// below 0x20 or above 0x7f), with SSE2, which every amd64 processor has.
//
//go:noescape
func blockMask(p *[64]byte) uint64
