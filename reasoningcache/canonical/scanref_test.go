package canonical

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// shortEscapeChar marks the characters that may follow a backslash in a
// canonical string (for strReference): " \\ b f n r t.
var shortEscapeChar = [256]bool{'"': true, '\\': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// strReference is the previous string scanner (eight bytes at a time,
// stopping at every quote and backslash, UTF-8 checked in a second pass),
// kept as the reference that the block scanner must agree with on every
// input: same span, same size, same position after it, same decision.
func (p *parser) strReference(isKey bool) (s span, size int64, ok bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	src := p.a.src[:p.end]
	start := p.pos
	i := start
	canonical, escaped := true, false
	var ctrl, high uint64
	for {
		for i+8 <= len(src) {
			x := binary.LittleEndian.Uint64(src[i : i+8])
			q := x ^ ('"' * ones)
			b := x ^ ('\\' * ones)
			stop := ((q - ones) &^ q) | ((b - ones) &^ b)
			c := (x - 0x20*ones) &^ x
			if stop &= highs; stop != 0 {
				k := bits.TrailingZeros64(stop) &^ 7 // bit offset of the stop byte
				below := uint64(1)<<k - 1
				ctrl |= c & below
				high |= x & below
				i += k >> 3
				break
			}
			ctrl |= c
			high |= x
			i += 8
		}
		for ; i < len(src); i++ {
			if c := src[i]; c == '"' || c == '\\' {
				break
			} else if c < 0x20 {
				ctrl = highs
			} else if c >= 0x80 {
				high = highs
			}
		}
		if i >= len(src) {
			return s, 0, p.fail(ReasonSyntax)
		}
		if src[i] == '"' {
			break
		}
		// A backslash.
		escaped = true
		if i+1 >= len(src) {
			return s, 0, p.fail(ReasonSyntax)
		}
		if shortEscapeChar[src[i+1]] {
			i += 2
			continue
		}
		switch src[i+1] {
		case '/':
			canonical = false
			i += 2
		case 'u':
			if i+6 > len(src) {
				return s, 0, p.fail(ReasonSyntax)
			}
			h, lower, ok := hex4(src[i+2 : i+6])
			if !ok {
				return s, 0, p.fail(ReasonSyntax)
			}
			if h >= 0x20 || shortEscape(byte(h)) != 0 || !lower {
				canonical = false
			}
			i += 6
		default:
			return s, 0, p.fail(ReasonSyntax)
		}
	}
	p.pos = i + 1
	raw := src[start:i]
	if ctrl&highs != 0 {
		return s, 0, p.fail(ReasonSyntax)
	}
	if high&highs != 0 && !validUTF8(raw) {
		return s, 0, p.fail(ReasonUTF8)
	}
	if canonical && !(isKey && escaped) {
		return span{off: uint32(start), n: uint32(len(raw))}, int64(len(raw)) + 2, true
	}
	return p.decode(raw)
}

// validUTF8 is utf8.Valid for text that is mostly ASCII with scattered
// multi-byte characters: after each non-ASCII character it returns to
// skipping eight ASCII bytes at a time (utf8.Valid goes byte by byte for
// the rest of the input once it meets the first one).
func validUTF8(p []byte) bool {
	const highs = 0x8080808080808080
	i := 0
	for i < len(p) {
		for i+8 <= len(p) && binary.LittleEndian.Uint64(p[i:])&highs == 0 {
			i += 8
		}
		for i < len(p) && p[i] < utf8.RuneSelf {
			i++
			if i&7 == 0 {
				break
			}
		}
		if i >= len(p) || p[i] < utf8.RuneSelf {
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && n == 1 {
			return false
		}
		i += n
	}
	return true
}

// scanBoth runs the block scanner and the reference on the string that
// starts after the opening quote at src[0] and reports any difference.
func scanBoth(t testing.TB, src []byte, isKey bool) {
	t.Helper()
	run := func(ref bool) (span, int64, bool, Reason, int, string) {
		var a arena
		a.reset(src)
		nodes := 1 << 20
		p := parser{a: &a, pos: 1, end: len(src), maxDepth: 64, maxCharge: 1 << 20, nodes: &nodes}
		var (
			s    span
			size int64
			ok   bool
		)
		if ref {
			s, size, ok = p.strReference(isKey)
		} else {
			s, size, ok = p.str(isKey)
		}
		if !ok {
			return span{}, 0, false, p.reason, 0, ""
		}
		return s, size, true, p.reason, p.pos, string(a.bytesOf(s))
	}
	s1, z1, ok1, r1, p1, b1 := run(false)
	s2, z2, ok2, r2, p2, b2 := run(true)
	if s1 != s2 || z1 != z2 || ok1 != ok2 || r1 != r2 || p1 != p2 || b1 != b2 {
		t.Fatalf("scan %q (key %v):\n got %v %d %v %q pos %d %q\nwant %v %d %v %q pos %d %q",
			src, isKey, s1, z1, ok1, r1, p1, b1, s2, z2, ok2, r2, p2, b2)
	}
}

// The block scanner agrees with the reference on strings whose escapes,
// multi-byte characters, invalid bytes and ends fall at every offset of
// the 64-byte blocks, with and without bytes after the closing quote.
func TestStringScanMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	pieces := []string{"a", "xyzxyzxyzxyzxyzxyzxyz", "é", "😀", "€", "\u2028", `\n`, `\"`, `\\`, `\\\\`, `\/`,
		`\u00e9`, `\u001f`, `\u001F`, `\u000a`, `\b`, `\t`, `\ud83d\ude00`, `\ud83d`, "\x01", "\x7f", "\xff",
		"\xe2\x82", "\xed\xa0\x80", `\x`, `\u12`, `\`, "\"", "\x00"}
	for range 60000 {
		var b strings.Builder
		b.WriteByte('"')
		for n := rng.IntN(40); n > 0; n-- {
			switch rng.IntN(5) {
			case 0:
				b.WriteString(strings.Repeat("k", rng.IntN(70)))
			case 1, 2:
				b.WriteString(pieces[rng.IntN(12)]) // mostly valid
			default:
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
		}
		if rng.IntN(8) > 0 {
			b.WriteByte('"')
		}
		if rng.IntN(2) == 0 {
			b.WriteString(`,"next":"value"}` + strings.Repeat(" ", rng.IntN(80)))
		}
		in := []byte(b.String())
		scanBoth(t, in, rng.IntN(3) == 0)
	}
}

// FuzzStringScan: the block scanner and the reference agree on any input.
func FuzzStringScan(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b\\c\/\u00e9"`, "\"\xff\"", `"\ud83d`, `"` + strings.Repeat(`x\n`, 40) + `"`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, isKey bool) {
		if len(in) == 0 || in[0] != '"' {
			return
		}
		scanBoth(t, in, isKey)
	})
}

// blockMasks (the vector version where there is one) agrees with the
// portable blockMasksSWAR and with a byte-by-byte definition.
func TestBlockMasks(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	interesting := []byte{0, 0x1f, 0x20, 0x21, '"', '#', '\\', ']', 0x7f, 0x80, 0xa2, 0xdc, 0xff, 'a',
		'b', 'c', 'e', 'f', 'g', 'n', 'o', 'r', 's', 't', 'u', 'B', 'N', 0xe2, 0xee, 0xf4}
	var p [64]byte
	for range 20000 {
		for j := range p {
			if rng.IntN(2) == 0 {
				p[j] = interesting[rng.IntN(len(interesting))]
			} else {
				p[j] = byte(rng.Uint32())
			}
		}
		var want masks
		for j, c := range p {
			switch c {
			case '"':
				want.quote |= 1 << j
			case '\\':
				want.backslash |= 1 << j
			case 'b', 'f', 'n', 'r', 't':
				want.letter |= 1 << j
			default:
				if c < 0x20 || c > 0x7f {
					want.other |= 1 << j
				}
			}
		}
		if got := blockMasks(&p); got != want {
			t.Fatalf("blockMasks(%q) = %+v, want %+v", p, got, want)
		}
		if got := blockMasksSWAR(&p); got != want {
			t.Fatalf("blockMasksSWAR(%q) = %+v, want %+v", p, got, want)
		}
	}
}

// escapes agrees with a byte-by-byte reading of runs of backslashes,
// across block boundaries.
func TestEscapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 20000 {
		var bs [4]uint64
		for i := range bs {
			// Dense and sparse backslashes, long runs.
			switch rng.IntN(3) {
			case 0:
				bs[i] = rng.Uint64()
			case 1:
				bs[i] = rng.Uint64() & rng.Uint64() & rng.Uint64()
			default:
				bs[i] = ^(rng.Uint64() & rng.Uint64() & rng.Uint64())
			}
		}
		var wantEsc, wantStarts [4]uint64
		escapedNext := false
		for i := range 256 {
			isBS := bs[i/64]>>(i%64)&1 == 1
			switch {
			case escapedNext:
				wantEsc[i/64] |= 1 << (i % 64)
				escapedNext = false
			case isBS:
				wantStarts[i/64] |= 1 << (i % 64)
				escapedNext = true
			}
		}
		var carry uint64
		for i := range bs {
			esc, starts := escapes(bs[i], &carry)
			if esc != wantEsc[i] || starts != wantStarts[i] {
				t.Fatalf("block %d of %x: escaped %x starts %x, want %x %x", i, bs, esc, starts, wantEsc[i], wantStarts[i])
			}
		}
	}
}
