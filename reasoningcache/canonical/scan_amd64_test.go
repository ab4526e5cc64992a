//go:build amd64 && !purego

package canonical

import (
	"math/rand/v2"
	"testing"
)

// Both vector classifiers agree with the portable one, whichever of them
// blockMasks selects on this machine.
func TestBlockMasksVector(t *testing.T) {
	t.Logf("AVX2: %v", useAVX2)
	rng := rand.New(rand.NewPCG(17, 18))
	var p [64]byte
	for range 20000 {
		for j := range p {
			if rng.IntN(2) == 0 {
				p[j] = "\"\\bfnrt\x00\x1f\x7f\x80\xff a"[rng.IntN(14)]
			} else {
				p[j] = byte(rng.Uint32())
			}
		}
		want := blockMasksSWAR(&p)
		var got masks
		got.quote, got.backslash, got.letter, got.other = blockMasksSSE2(&p)
		if got != want {
			t.Fatalf("blockMasksSSE2(%q) = %+v, want %+v", p, got, want)
		}
		if useAVX2 {
			got.quote, got.backslash, got.letter, got.other = blockMasksAVX2(&p)
			if got != want {
				t.Fatalf("blockMasksAVX2(%q) = %+v, want %+v", p, got, want)
			}
		}
	}
}
