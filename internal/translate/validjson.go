package translate

import (
	"encoding/binary"
	"unicode/utf8"
)

// maxDepth is the nesting encoding/json accepts: json.Valid refuses a
// value nested more than 10000 arrays and objects deep.
const maxDepth = 10000

// SWAR constants: one bit or value per byte of a 64-bit word.
const (
	lsb64 = 0x0101010101010101
	msb64 = 0x8080808080808080
)

// plainWord reports whether none of the 8 bytes of x needs a closer look
// inside a string: no quote, backslash, control character or non-ASCII
// byte. It may report false for a plain word (never true for one that is
// not), which only costs a byte-wise look.
func plainWord(x uint64) bool {
	quote := x ^ (lsb64 * '"')
	bs := x ^ (lsb64 * '\\')
	special := (quote - lsb64) &^ quote
	special |= (bs - lsb64) &^ bs
	special |= x - lsb64*0x20 // a byte below 0x20 borrows into its top bit
	special |= x              // a byte of 0x80 or more has its top bit set
	return special&msb64 == 0
}

// validJSON reports whether b is exactly one JSON value, surrounded by
// optional whitespace, whose strings are valid UTF-8: the same answer as
// json.Valid(b) && utf8.Valid(b), in one pass and several times faster.
// Strings are skipped eight bytes at a time while they hold nothing that
// needs a look.
func validJSON(b []byte) bool { return scanJSON(b, nil) }

// scanJSON is validJSON that also calls member, when b is an object and
// member is not nil, with each top-level member's raw key token and value,
// in order: the split members does, done by the validating pass.
func scanJSON(b []byte, member func(key, val []byte)) bool {
	var stack [maxDepth/64 + 1]uint64 // bit set: the container at that depth is an object
	depth := 0
	var keyTok []byte // the current top-level member's key token
	valStart := 0     // where its value starts
	i := skipWS(b, 0)
	topObj := i < len(b) && b[i] == '{' && member != nil
	k := 0 // where the current key starts
	goto value
member: // a key and its colon at i, then the value
	k = i
	if i = key(b, i); i < 0 {
		return false
	}
	if depth == 1 && topObj {
		keyTok = b[k:stringEnd(b, k)]
	}
value:
	if i >= len(b) {
		return false
	}
	if depth == 1 && topObj {
		valStart = i
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth == maxDepth {
			return false
		}
		obj := c == '{'
		if obj {
			stack[depth/64] |= 1 << (depth % 64)
		} else {
			stack[depth/64] &^= 1 << (depth % 64)
		}
		depth++
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == c+2 { // '}' or ']'
			depth--
			i++
			break
		}
		if obj {
			goto member
		}
		goto value
	case c == '"':
		if i = stringEnd(b, i); i < 0 {
			return false
		}
	case c == 't':
		if !hasAt(b, i, "true") {
			return false
		}
		i += 4
	case c == 'f':
		if !hasAt(b, i, "false") {
			return false
		}
		i += 5
	case c == 'n':
		if !hasAt(b, i, "null") {
			return false
		}
		i += 4
	case c == '-' || c >= '0' && c <= '9':
		if i = numberEnd(b, i); i < 0 {
			return false
		}
	default:
		return false
	}
	// after a value
	for {
		if depth == 1 && topObj {
			member(keyTok, b[valStart:i])
		}
		i = skipWS(b, i)
		if depth == 0 {
			return i == len(b)
		}
		if i >= len(b) {
			return false
		}
		top := depth - 1
		obj := stack[top/64]&(1<<(top%64)) != 0
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
			if obj {
				goto member
			}
			goto value
		case '}':
			if !obj {
				return false
			}
		case ']':
			if obj {
				return false
			}
		default:
			return false
		}
		depth--
		i++
	}
}

// key checks an object member's key and colon at b[i] and returns the
// index of its value (after whitespace), or -1.
func key(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipWS(b, i+1)
}

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// hasAt reports whether b holds lit at i.
func hasAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// stringEnd checks the string token at b[i] == '"' (escapes, no control
// characters, valid UTF-8) and returns the index after it, or -1.
func stringEnd(b []byte, i int) int {
	i++
	for {
		for len(b)-i >= 8 && plainWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return -1
			}
			i += n
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// numberEnd checks the number at b[i] and returns the index after it, or
// -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the index of the first non-digit at or after i.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
