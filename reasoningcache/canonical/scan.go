package canonical

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// String scanning. A JSON string is scanned in blocks of 64 bytes: a
// branch-free pass builds a 64-bit mask with one bit per byte that needs
// attention ('"', '\\', a control character or a non-ASCII byte), and only
// those bytes are visited, in order. Runs of plain bytes cost a few
// arithmetic operations per eight bytes, and the only data-dependent
// branches are per special byte, not per word, which matters for tool
// outputs that carry an escape every couple of dozen bytes.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows  = 0x7f7f7f7f7f7f7f7f
)

// specialBits returns the high bit of every byte of x that is '"', '\\',
// below 0x20 or above 0x7f. The test is exact per byte (no carries cross
// byte boundaries).
func specialBits(x uint64) uint64 {
	q := x ^ ('"' * ones)
	b := x ^ ('\\' * ones)
	notQ := (q&lows + lows) | q     // high bit set: byte != '"'
	notB := (b&lows + lows) | b     // high bit set: byte != '\\'
	printable := x&lows + 0x60*ones // high bit set: low seven bits >= 0x20
	return (^(notQ & notB & printable) | x) & highs
}

// movemask packs the high bits of the eight bytes of m (and nothing else
// set) into the low eight bits, byte 0 first.
func movemask(m uint64) uint64 { return (m * 0x0002040810204081) >> 56 }

// blockMaskSWAR returns bit j set for every special byte p[j], eight
// bytes at a time in general-purpose registers. It is blockMask where no
// vector version exists, and the reference for the vector version.
func blockMaskSWAR(p *[64]byte) uint64 {
	m0 := movemask(specialBits(binary.LittleEndian.Uint64(p[0:])))
	m1 := movemask(specialBits(binary.LittleEndian.Uint64(p[8:])))
	m2 := movemask(specialBits(binary.LittleEndian.Uint64(p[16:])))
	m3 := movemask(specialBits(binary.LittleEndian.Uint64(p[24:])))
	m4 := movemask(specialBits(binary.LittleEndian.Uint64(p[32:])))
	m5 := movemask(specialBits(binary.LittleEndian.Uint64(p[40:])))
	m6 := movemask(specialBits(binary.LittleEndian.Uint64(p[48:])))
	m7 := movemask(specialBits(binary.LittleEndian.Uint64(p[56:])))
	return m0 | m1<<8 | m2<<16 | m3<<24 | m4<<32 | m5<<40 | m6<<48 | m7<<56
}

// shortEscapeChar marks the characters that may follow a backslash in a
// canonical string: " \\ b f n r t.
var shortEscapeChar = [256]bool{'"': true, '\\': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// str scans a string whose opening quote has been consumed. Contents that
// are already in RFC 8785 form (valid UTF-8, only the escapes \" \\ \b \f
// \n \r \t and lowercase \u00xx for other control characters) are
// referenced in place; anything else is decoded into scratch. Keys with any
// escape are always decoded so that they can be compared.
//
// Syntax errors (a raw control character, a bad escape, no closing quote)
// take precedence over invalid UTF-8: the first stops the scan, the second
// is only remembered, so the reason reported for an input does not depend
// on where in it the two occur.
func (p *parser) str(isKey bool) (s span, size int64, ok bool) {
	src := p.a.src[:p.end]
	start := p.pos
	// Short strings (most keys and type names) end in their first word.
	if start+8 <= len(src) {
		if m := specialBits(binary.LittleEndian.Uint64(src[start:])); m != 0 {
			if j := start + bits.TrailingZeros64(m)>>3; src[j] == '"' {
				p.pos = j + 1
				return span{off: uint32(start), n: uint32(j - start)}, int64(j-start) + 2, true
			}
		}
	}
	canonical, escaped, badUTF8 := true, false, false
	var carry uint64 // bits of the next block consumed by the previous one
	end := -1
	for base := start; end < 0; base += 64 {
		if base >= len(src) {
			return s, 0, p.fail(ReasonSyntax)
		}
		var m uint64
		if base+64 <= len(src) {
			m = blockMask((*[64]byte)(src[base:]))
		} else {
			// The last partial block: zero padding reads as a control
			// character, which the loop below turns into "unterminated".
			var tail [64]byte
			copy(tail[:], src[base:])
			m = blockMask(&tail)
		}
		m &^= carry
		carry = 0
		for m != 0 {
			j := bits.TrailingZeros64(m)
			pos := base + j
			if pos >= len(src) {
				return s, 0, p.fail(ReasonSyntax)
			}
			c := src[pos]
			if c == '"' {
				end = pos
				break
			}
			if c == '\\' {
				escaped = true
				if pos+1 >= len(src) {
					return s, 0, p.fail(ReasonSyntax)
				}
				// The escaped character is consumed with the backslash.
				m &^= 3 << j
				carry = uint64(j+1) >> 6 // 1 when j == 63
				e := src[pos+1]
				if shortEscapeChar[e] {
					continue
				}
				switch e {
				case '/':
					canonical = false
				case 'u':
					if pos+6 > len(src) {
						return s, 0, p.fail(ReasonSyntax)
					}
					h, lower, ok := hex4(src[pos+2 : pos+6])
					if !ok {
						return s, 0, p.fail(ReasonSyntax)
					}
					if h >= 0x20 || shortEscape(byte(h)) != 0 || !lower {
						canonical = false
					}
				default:
					return s, 0, p.fail(ReasonSyntax)
				}
				continue
			}
			if c < 0x20 {
				return s, 0, p.fail(ReasonSyntax)
			}
			// A non-ASCII byte: validate one character and consume it.
			r, n := utf8.DecodeRune(src[pos:])
			if r == utf8.RuneError && n == 1 {
				badUTF8 = true
			}
			if j+n <= 64 {
				m &^= (1<<n - 1) << j
			} else {
				m &^= ^uint64(0) << j
				carry = 1<<(j+n-64) - 1
			}
		}
	}
	p.pos = end + 1
	raw := src[start:end]
	if badUTF8 {
		return s, 0, p.fail(ReasonUTF8)
	}
	if canonical && !(isKey && escaped) {
		return span{off: uint32(start), n: uint32(len(raw))}, int64(len(raw)) + 2, true
	}
	return p.decode(raw)
}
