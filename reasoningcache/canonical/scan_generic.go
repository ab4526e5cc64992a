//go:build !amd64 || purego

package canonical

// blockMask returns bit j set for every special byte p[j] ('"', '\\',
// below 0x20 or above 0x7f).
func blockMask(p *[64]byte) uint64 { return blockMaskSWAR(p) }
