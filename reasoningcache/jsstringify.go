package reasoningcache

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// restringify returns JSON.stringify(JSON.parse(s)) as a JavaScript client
// computes it when it parses tool arguments and serializes them again:
// compact, object keys in their original order, strings escaped minimally
// (\" \\ \b \f \n \r \t, other controls as lowercase \u00xx, nothing
// else). Where the result would depend on a JavaScript detail that cannot
// be reproduced without guessing, ok is false: invalid JSON or UTF-8, a
// duplicate key, an array-index-like key (JavaScript moves those first),
// a lone surrogate, or a number spelling that JavaScript would print
// differently (an integer beyond 2^53-1, 1.0, 1.50, an exponent, -0, a
// value that is not exactly the printed double).
func restringify(s string) (string, bool) {
	p := jsParser{src: s, out: make([]byte, 0, len(s))}
	p.ws()
	if !p.value(0) {
		return "", false
	}
	p.ws()
	if p.pos != len(p.src) {
		return "", false
	}
	return string(p.out), true
}

const maxArgDepth = 256

type jsParser struct {
	src string
	pos int
	out []byte
}

func (p *jsParser) ws() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsParser) value(depth int) bool {
	if depth > maxArgDepth || p.pos >= len(p.src) {
		return false
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		str, ok := p.str()
		if !ok {
			return false
		}
		p.out = appendJSString(p.out, str)
		return true
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	default:
		return p.number()
	}
}

func (p *jsParser) lit(w string) bool {
	if len(p.src)-p.pos < len(w) || p.src[p.pos:p.pos+len(w)] != w {
		return false
	}
	p.pos += len(w)
	p.out = append(p.out, w...)
	return true
}

func (p *jsParser) object(depth int) bool {
	if p.open('}') {
		return true
	}
	seen := map[string]bool{}
	for first := true; ; first = false {
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return false
		}
		key, ok := p.str()
		if !ok || seen[key] || arrayIndexKey(key) {
			return false
		}
		seen[key] = true
		if !first {
			p.out = append(p.out, ',')
		}
		p.out = appendJSString(p.out, key)
		p.ws()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return false
		}
		p.pos++
		p.out = append(p.out, ':')
		p.ws()
		if !p.value(depth + 1) {
			return false
		}
		if done, ok := p.next('}'); done || !ok {
			return ok
		}
	}
}

func (p *jsParser) array(depth int) bool {
	if p.open(']') {
		return true
	}
	for first := true; ; first = false {
		if !first {
			p.out = append(p.out, ',')
		}
		p.ws()
		if !p.value(depth + 1) {
			return false
		}
		if done, ok := p.next(']'); done || !ok {
			return ok
		}
	}
}

// open consumes and writes the opening bracket at p.pos and reports
// whether the container is empty (closer follows; consumed and written).
func (p *jsParser) open(closer byte) (empty bool) {
	p.out = append(p.out, p.src[p.pos])
	p.pos++
	p.ws()
	if p.pos < len(p.src) && p.src[p.pos] == closer {
		p.pos++
		p.out = append(p.out, closer)
		return true
	}
	return false
}

// next consumes what follows a member or an element: a comma (more
// follow) or closer, which it writes. done reports closer; ok is false on
// anything else.
func (p *jsParser) next(closer byte) (done, ok bool) {
	p.ws()
	if p.pos >= len(p.src) {
		return false, false
	}
	switch p.src[p.pos] {
	case ',':
		p.pos++
		return false, true
	case closer:
		p.pos++
		p.out = append(p.out, closer)
		return true, true
	}
	return false, false
}

// arrayIndexKey reports whether JavaScript treats key as an array index
// (a canonical decimal below 2^32-1), which objects enumerate first.
func arrayIndexKey(key string) bool {
	if key == "" || len(key) > 10 || (len(key) > 1 && key[0] == '0') {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseUint(key, 10, 64)
	return err == nil && n < math.MaxUint32
}

// str decodes a JSON string at p.pos, refusing invalid UTF-8, raw control
// characters and lone surrogates.
func (p *jsParser) str() (string, bool) {
	p.pos++ // opening quote
	var b []byte
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(b), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return "", false
			}
			e := p.src[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || p.pos+6 > len(p.src) || p.src[p.pos] != '\\' || p.src[p.pos+1] != 'u' {
						return "", false
					}
					p.pos += 2
					r2, ok := p.hex4()
					if !ok {
						return "", false
					}
					r = utf16.DecodeRune(r, r2)
					if r == utf8.RuneError {
						return "", false
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		default:
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			b = append(b, p.src[p.pos:p.pos+n]...)
			p.pos += n
		}
	}
	return "", false
}

func (p *jsParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}

// number accepts only spellings that JavaScript prints back unchanged.
func (p *jsParser) number() bool {
	start := p.pos
	if p.pos < len(p.src) && p.src[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	intPart := p.src[intStart:p.pos]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return false
	}
	frac := false
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		frac = true
		p.pos++
		fs := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == fs || p.src[p.pos-1] == '0' { // no digits, or a trailing zero
			return false
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		return false
	}
	lit := p.src[start:p.pos]
	if !frac {
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || n > 1<<53-1 || n < -(1<<53-1) || lit == "-0" {
			return false
		}
	} else {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return false
		}
		a := math.Abs(f)
		if a < 1e-6 || a >= 1e21 || strconv.FormatFloat(f, 'f', -1, 64) != lit {
			return false
		}
	}
	p.out = append(p.out, lit...)
	return true
}

// appendJSString appends s quoted as JSON.stringify quotes it.
func appendJSString(dst []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
