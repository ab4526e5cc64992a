package canonical

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// parser reads one JSON value from a.src[pos:end] into the arena, measuring
// it against the limits as it goes. It stops at the first refusal, so the
// work done on any input is bounded by the limits.
type parser struct {
	a         *arena
	pos, end  int
	maxDepth  int
	maxCharge int64
	nodes     *int // remaining node budget for the whole pass
	reason    Reason
}

func (p *parser) fail(r Reason) bool {
	if p.reason == "" {
		p.reason = r
	}
	return false
}

// charge accounts n scratch bytes to the current value.
func (p *parser) charge(n int64) bool {
	p.a.charged += n
	if p.a.charged > p.maxCharge {
		return p.fail(ReasonScratch)
	}
	return true
}

// newNode accounts one JSON value and appends it.
func (p *parser) newNode(n node) (uint32, bool) {
	if *p.nodes <= 0 {
		return 0, p.fail(ReasonNodes)
	}
	*p.nodes--
	if !p.charge(ScratchPerNode) {
		return 0, false
	}
	return p.a.add(n), true
}

func (p *parser) ws() {
	src := p.a.src
	if p.pos < p.end && src[p.pos] > ' ' {
		return // compact input: the common case
	}
	for p.pos < p.end {
		switch src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.a.verbatim = false
			p.pos++
		default:
			return
		}
	}
}

// document parses exactly one value with optional surrounding whitespace.
func (p *parser) document(depth int) (uint32, bool) {
	p.ws()
	v, ok := p.value(depth)
	if !ok {
		return 0, false
	}
	p.ws()
	if p.pos != p.end {
		return 0, p.fail(ReasonSyntax)
	}
	return v, true
}

func (p *parser) value(depth int) (uint32, bool) {
	if depth > p.maxDepth {
		return 0, p.fail(ReasonDepth)
	}
	if p.pos >= p.end {
		return 0, p.fail(ReasonSyntax)
	}
	src := p.a.src
	switch c := src[p.pos]; c {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		p.pos++
		s, size, ok := p.str(false)
		if !ok {
			return 0, false
		}
		return p.newNode(node{kind: kString, val: s, size: size})
	case 't':
		return p.lit("true", kTrue)
	case 'f':
		return p.lit("false", kFalse)
	case 'n':
		return p.lit("null", kNull)
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return p.number()
		}
		return 0, p.fail(ReasonSyntax)
	}
}

func (p *parser) lit(word string, k kind) (uint32, bool) {
	if p.end-p.pos < len(word) || string(p.a.src[p.pos:p.pos+len(word)]) != word {
		return 0, p.fail(ReasonSyntax)
	}
	p.pos += len(word)
	return p.newNode(node{kind: k, size: int64(len(word))})
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *parser) number() (uint32, bool) {
	src, start := p.a.src, p.pos
	i := p.pos
	if src[i] == '-' {
		i++
	}
	switch {
	case i < p.end && src[i] == '0':
		i++
	case i < p.end && src[i] >= '1' && src[i] <= '9':
		for i < p.end && isDigit(src[i]) {
			i++
		}
	default:
		return 0, p.fail(ReasonSyntax)
	}
	if i < p.end && src[i] == '.' {
		i++
		if i >= p.end || !isDigit(src[i]) {
			return 0, p.fail(ReasonSyntax)
		}
		for i < p.end && isDigit(src[i]) {
			i++
		}
	}
	if i < p.end && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < p.end && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= p.end || !isDigit(src[i]) {
			return 0, p.fail(ReasonSyntax)
		}
		for i < p.end && isDigit(src[i]) {
			i++
		}
	}
	p.pos = i
	text := src[start:i]
	a := p.a
	off := len(a.scratch)
	out, same, ok := canonNumber(a.scratch, text)
	if !ok {
		return 0, p.fail(ReasonNumber)
	}
	if same {
		return p.newNode(node{kind: kNumber, val: span{off: uint32(start), n: uint32(len(text))}, size: int64(len(text))})
	}
	a.scratch = out
	a.verbatim = false
	n := len(out) - off
	if !p.charge(int64(n)) {
		return 0, false
	}
	return p.newNode(node{kind: kNumber, val: span{off: uint32(off), n: uint32(n), scratch: true}, size: int64(n)})
}

func (p *parser) array(depth int) (uint32, bool) {
	a := p.a
	p.pos++ // [
	mark := len(a.stack)
	p.ws()
	if p.pos < p.end && a.src[p.pos] == ']' {
		p.pos++
		return p.close(kArray, mark)
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return 0, false
		}
		a.stack = append(a.stack, v)
		if done, ok := p.next(']'); !ok {
			return 0, false
		} else if done {
			return p.close(kArray, mark)
		}
	}
}

func (p *parser) object(depth int) (uint32, bool) {
	a := p.a
	p.pos++ // {
	mark := len(a.stack)
	p.ws()
	if p.pos < p.end && a.src[p.pos] == '}' {
		p.pos++
		return p.close(kObject, mark)
	}
	var prev span // the previous key
	ordered := true
	for {
		if p.pos >= p.end || a.src[p.pos] != '"' {
			return 0, p.fail(ReasonSyntax)
		}
		p.pos++
		key, _, ok := p.str(true)
		if !ok {
			return 0, false
		}
		if ordered && len(a.stack) > mark && compareKeys(a.bytesOf(prev), a.bytesOf(key)) >= 0 {
			ordered = false
		}
		prev = key
		p.ws()
		if p.pos >= p.end || a.src[p.pos] != ':' {
			return 0, p.fail(ReasonSyntax)
		}
		p.pos++
		p.ws()
		v, ok := p.value(depth + 1)
		if !ok {
			return 0, false
		}
		a.nodes[v].key = key
		a.stack = append(a.stack, v)
		if done, ok := p.next('}'); !ok {
			return 0, false
		} else if done {
			obj, ok := p.close(kObject, mark)
			if ok && !ordered {
				a.unsorted = append(a.unsorted, obj)
			}
			return obj, ok
		}
	}
}

// next consumes what follows a member or an element: a comma and the
// white space after it (more follow), or closer (done).
func (p *parser) next(closer byte) (done, ok bool) {
	p.ws()
	if p.pos >= p.end {
		return false, p.fail(ReasonSyntax)
	}
	switch p.a.src[p.pos] {
	case ',':
		p.pos++
		p.ws()
		return false, true
	case closer:
		p.pos++
		return true, true
	}
	return false, p.fail(ReasonSyntax)
}

// close moves the children collected since mark into kids and creates the
// container node.
func (p *parser) close(k kind, mark int) (uint32, bool) {
	a := p.a
	first := len(a.kids)
	a.kids = append(a.kids, a.stack[mark:]...)
	count := len(a.stack) - mark
	a.stack = a.stack[:mark]
	return p.newNode(node{kind: k, first: uint32(first), count: uint32(count)})
}

// decode writes the decoded UTF-8 of raw string contents (already scanned
// for syntax) into scratch.
func (p *parser) decode(raw []byte) (span, int64, bool) {
	a := p.a
	a.verbatim = false
	off := len(a.scratch)
	room := p.maxCharge - a.charged // decoded bytes still allowed
	for i := 0; i < len(raw); {
		if int64(len(a.scratch)-off) > room {
			return span{}, 0, p.fail(ReasonScratch)
		}
		b := bytes.IndexByte(raw[i:], '\\')
		if b != 0 {
			if b < 0 {
				b = len(raw) - i
			}
			if int64(len(a.scratch)-off+b) > room {
				return span{}, 0, p.fail(ReasonScratch)
			}
			a.scratch = append(a.scratch, raw[i:i+b]...)
			i += b
			continue
		}
		e := raw[i+1]
		i += 2
		switch e {
		case 'b':
			a.scratch = append(a.scratch, '\b')
		case 'f':
			a.scratch = append(a.scratch, '\f')
		case 'n':
			a.scratch = append(a.scratch, '\n')
		case 'r':
			a.scratch = append(a.scratch, '\r')
		case 't':
			a.scratch = append(a.scratch, '\t')
		case 'u':
			h, _, _ := hex4(raw[i : i+4])
			i += 4
			r := rune(h)
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 || i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
					return span{}, 0, p.fail(ReasonSurrogate)
				}
				lo, _, _ := hex4(raw[i+2 : i+6])
				r = utf16.DecodeRune(r, rune(lo))
				if r == utf8.RuneError {
					return span{}, 0, p.fail(ReasonSurrogate)
				}
				i += 6
			}
			a.scratch = utf8.AppendRune(a.scratch, r)
		default: // '"', '\\', '/'
			a.scratch = append(a.scratch, e)
		}
	}
	n := len(a.scratch) - off
	if !p.charge(int64(n)) {
		return span{}, 0, false
	}
	s := span{off: uint32(off), n: uint32(n), scratch: true}
	return s, escapedLen(a.scratch[off:]) + 2, true
}

// hex4 decodes four hex digits, reporting whether letters were lowercase.
func hex4(b []byte) (v uint16, lower, ok bool) {
	lower = true
	for _, c := range b[:4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
			lower = false
		default:
			return 0, false, false
		}
		v = v<<4 | uint16(d)
	}
	return v, lower, true
}

// shortEscape returns the RFC 8785 two-character escape letter for c, or 0.
func shortEscape(c byte) byte {
	switch c {
	case '\b':
		return 'b'
	case '\f':
		return 'f'
	case '\n':
		return 'n'
	case '\r':
		return 'r'
	case '\t':
		return 't'
	case '"':
		return '"'
	case '\\':
		return '\\'
	}
	return 0
}

// escapedLen is the length of decoded UTF-8 b once escaped per RFC 8785.
func escapedLen(b []byte) int64 {
	n := int64(len(b))
	for _, c := range b {
		switch {
		case shortEscape(c) != 0:
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}
