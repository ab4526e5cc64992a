package canonical

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// String scanning. A JSON string is scanned in blocks of 64 bytes. A
// branch-free pass classifies the block into 64-bit masks with one bit per
// byte (quotes, backslashes, the letters b f n r t, and control or
// non-ASCII bytes); the escaped bytes follow from the backslash mask by
// carry arithmetic; and a few mask operations then find the closing quote
// and check every escape at once. Bytes are only visited one by one for
// what is rare in practice: \/ and \u escapes, errors, and non-ASCII
// characters (to validate them). Tool outputs carry an escape every couple
// of dozen bytes, so a scanner that branches per escape mispredicts a lot.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows  = 0x7f7f7f7f7f7f7f7f
	odds  = 0xaaaaaaaaaaaaaaaa // bits 1, 3, 5, ...
)

// shortWords is how many 8-byte words a string is read by word before the
// block scanner takes over.
const shortWords = 4

// masks are the classes of the 64 bytes of one block, bit j for byte j.
type masks struct {
	quote, backslash uint64
	letter           uint64 // b, f, n, r or t: with '"' and '\\' the short escapes
	other            uint64 // below 0x20 or above 0x7f
}

// notEqual returns the high bit of every byte of x that differs from c.
// The test is exact per byte (no carries cross byte boundaries).
func notEqual(x uint64, c byte) uint64 {
	y := x ^ (uint64(c) * ones)
	return (y&lows + lows) | y
}

// wordClasses classifies the eight bytes of x like blockMasks, as the
// high bit of each byte.
func wordClasses(x uint64) masks {
	letter := notEqual(x, 'b') & notEqual(x, 'f') & notEqual(x, 'n') & notEqual(x, 'r') & notEqual(x, 't')
	printable := x&lows + 0x60*ones // high bit set: low seven bits >= 0x20
	return masks{
		quote:     ^notEqual(x, '"') & highs,
		backslash: ^notEqual(x, '\\') & highs,
		letter:    ^letter & highs,
		other:     (^printable | x) & highs,
	}
}

// wordStops returns, as the high bit of each byte of x, the quotes and
// every byte that ends a plain run: a quote, a backslash, a control or a
// non-ASCII byte (wordClasses without the escape letters).
func wordStops(x uint64) (quote, stop uint64) {
	quote = ^notEqual(x, '"') & highs
	backslash := ^notEqual(x, '\\') & highs
	printable := x&lows + 0x60*ones
	return quote, quote | backslash | (^printable|x)&highs
}

// movemask packs the high bits of the eight bytes of m (and nothing else
// set) into the low eight bits, byte 0 first.
func movemask(m uint64) uint64 { return (m * 0x0002040810204081) >> 56 }

// blockMasksSWAR classifies p eight bytes at a time in general-purpose
// registers. It is blockMasks where no vector version exists, and the
// reference for the vector version.
func blockMasksSWAR(p *[64]byte) masks {
	var m masks
	for w := 0; w < 64; w += 8 {
		c := wordClasses(binary.LittleEndian.Uint64(p[w:]))
		m.quote |= movemask(c.quote) << w
		m.backslash |= movemask(c.backslash) << w
		m.letter |= movemask(c.letter) << w
		m.other |= movemask(c.other) << w
	}
	return m
}

// escapes finds the escaped bytes of a block: the byte after every
// backslash that starts an escape (a run of n backslashes starts
// ceil(n/2) escapes, every other one). carry is 1 when the first byte of
// the block is escaped by the last backslash of the previous block, and is
// updated for the next block. It returns the escaped bytes and the
// backslashes that start an escape. This is the carry arithmetic of
// simdjson's escape scanner.
func escapes(backslash uint64, carry *uint64) (escaped, starts uint64) {
	potential := backslash &^ *carry
	code := ((potential<<1 | odds) - potential) ^ odds
	escaped = code ^ (backslash | *carry)
	starts = code & backslash
	*carry = starts >> 63
	return escaped, starts
}

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
	// Short strings (keys, type names, call ids) end in their first few
	// words: a quote before any backslash, control or non-ASCII byte.
	for w := start; w+8 <= len(src) && w < start+shortWords*8; w += 8 {
		quote, m := wordStops(binary.LittleEndian.Uint64(src[w:]))
		if m == 0 {
			continue
		}
		if m&-m == quote&-quote {
			j := w + bits.TrailingZeros64(m)>>3
			p.pos = j + 1
			return span{off: uint32(start), n: uint32(j - start)}, int64(j-start) + 2, true
		}
		break
	}
	canonical, escaped, badUTF8 := true, false, false
	var carry, consumed uint64 // escape and UTF-8 carries into the next block
	var tail [64]byte
	end := -1
	for base := start; end < 0; base += 64 {
		if base >= len(src) {
			return s, 0, p.fail(ReasonSyntax)
		}
		blk := &tail
		if base+64 <= len(src) {
			blk = (*[64]byte)(src[base:])
		} else {
			// The last partial block: zero padding reads as a control
			// character, which turns into "unterminated" below.
			copy(tail[:], src[base:])
		}
		m := blockMasks(blk)
		esc, starts := escapes(m.backslash, &carry)
		below := ^uint64(0)
		if stop := m.quote &^ esc; stop != 0 {
			end = base + bits.TrailingZeros64(stop)
			below = stop&-stop - 1
		}
		if starts&below != 0 {
			escaped = true
		}
		// Escaped bytes other than " \\ b f n r t: \/, \u or an error.
		if odd := esc & below &^ (m.quote | m.backslash | m.letter); odd != 0 {
			if !p.oddEscapes(src, base, odd, &canonical) {
				return s, 0, false
			}
		}
		other := m.other & below &^ consumed
		consumed = 0
		for other != 0 {
			j := bits.TrailingZeros64(other)
			if blk[j] < 0x20 {
				return s, 0, p.fail(ReasonSyntax)
			}
			// A non-ASCII byte: validate one character and consume it.
			r, n := utf8.DecodeRune(src[base+j:])
			if r == utf8.RuneError && n == 1 {
				badUTF8 = true
			}
			if j+n <= 64 {
				other &^= (1<<n - 1) << j
			} else {
				other &^= ^uint64(0) << j
				consumed = 1<<(j+n-64) - 1
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

// oddEscapes checks the escaped bytes of the block at base that are not a
// short escape letter: \/ (valid, not canonical), \u with four hex digits
// (not canonical unless it is a lowercase \u00xx for a control character
// without a short form) or a syntax error.
func (p *parser) oddEscapes(src []byte, base int, odd uint64, canonical *bool) bool {
	for ; odd != 0; odd &= odd - 1 {
		pos := base + bits.TrailingZeros64(odd)
		if pos >= len(src) {
			return p.fail(ReasonSyntax)
		}
		switch src[pos] {
		case '/':
			*canonical = false
		case 'u':
			if pos+5 > len(src) {
				return p.fail(ReasonSyntax)
			}
			h, lower, ok := hex4(src[pos+1 : pos+5])
			if !ok {
				return p.fail(ReasonSyntax)
			}
			if h >= 0x20 || shortEscape(byte(h)) != 0 || !lower {
				*canonical = false
			}
		default:
			return p.fail(ReasonSyntax)
		}
	}
	return true
}
