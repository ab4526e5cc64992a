//go:build !amd64 || purego

package canonical

// blockMasks classifies the 64 bytes of p.
func blockMasks(p *[64]byte) masks { return blockMasksSWAR(p) }

// prefetchLines does nothing without an assembly version.
func prefetchLines(p *byte, n int) {}
