package canonical

import (
	"cmp"
	"encoding/binary"
	"hash"
	"slices"
	"unicode/utf8"
)

// compareKeys orders object keys as RFC 8785 §3.2.3 requires: by their
// UTF-16 code units. UTF-8 byte order equals code point order, which
// differs from UTF-16 order only between supplementary characters and
// U+E000..U+FFFF, so only the first differing character needs decoding.
func compareKeys(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	if ua, ub := utf16First(ra), utf16First(rb); ua != ub {
		return cmp.Compare(ua, ub)
	}
	return cmp.Compare(ra, rb)
}

// utf16First is the first UTF-16 code unit of r.
func utf16First(r rune) rune {
	if r >= 0x10000 {
		return 0xd800 + (r-0x10000)>>10
	}
	return r
}

// sortObject orders the members of object i by key.
func (a *arena) sortObject(i uint32) {
	kids := a.children(i)
	if len(kids) < 2 {
		return
	}
	slices.SortFunc(kids, func(x, y uint32) int {
		return compareKeys(a.keyBytes(x), a.keyBytes(y))
	})
}

// sortAll orders every object parsed or synthesized so far and refuses
// duplicate keys (RFC 8785 requires I-JSON input). An object whose keys
// arrive strictly increasing (so without duplicates) is left as it is: the
// parser checks that as it reads the keys, so only the objects listed in
// unsorted are looked at.
func (a *arena) sortAll() Reason {
	for _, i := range a.unsorted {
		if a.ordered(i) {
			continue
		}
		a.verbatim = false
		a.sortObject(i)
		kids := a.children(i)
		for j := 1; j < len(kids); j++ {
			if string(a.keyBytes(kids[j-1])) == string(a.keyBytes(kids[j])) {
				return ReasonDuplicate
			}
		}
	}
	return ""
}

// ordered reports whether the keys of object i are strictly increasing.
func (a *arena) ordered(i uint32) bool {
	kids := a.children(i)
	for j := 1; j < len(kids); j++ {
		if compareKeys(a.keyBytes(kids[j-1]), a.keyBytes(kids[j])) >= 0 {
			return false
		}
	}
	return true
}

// measure computes the canonical size of value i (and of everything below
// it), taking normalization edits into account.
func (a *arena) measure(i uint32) int64 {
	n := &a.nodes[i]
	switch n.kind {
	case kArray:
		size := int64(2)
		for j, k := range a.children(i) {
			if j > 0 {
				size++
			}
			size += a.measure(k)
		}
		n = &a.nodes[i]
		n.size = size
	case kObject:
		size, live := int64(2), 0
		for _, k := range a.children(i) {
			if a.nodes[k].gone {
				continue
			}
			if live > 0 {
				size++
			}
			live++
			size += a.keySize(k) + 1 + a.measure(k)
		}
		n = &a.nodes[i]
		n.size = size
	case kConcat:
		size := int64(2)
		for _, k := range a.children(i) {
			size += a.nodes[k].size - 2
		}
		n.size = size
	}
	return n.size
}

// keySize is the canonical size of member k's key, quotes included.
func (a *arena) keySize(k uint32) int64 {
	key := a.nodes[k].key
	if key.scratch {
		return escapedLen(a.bytesOf(key)) + 2
	}
	return int64(key.n) + 2
}

// chunkSize bounds the sink's buffer; larger verbatim runs bypass it.
const chunkSize = 8 << 10

// sink receives canonical bytes: either into up to three hashes through a
// bounded buffer, or (keep) into buf as the whole output. Its write
// methods only append while buf has room, so they inline; full handles
// the rest.
type sink struct {
	buf   []byte
	hs    [3]hash.Hash
	nh    int
	keep  bool   // true: buf is the output, never flushed
	chunk []byte // the hashing buffer, kept across uses
}

func (s *sink) toHashes(hs ...hash.Hash) {
	s.keep = false
	s.nh = copy(s.hs[:], hs)
	if s.chunk == nil {
		s.chunk = make([]byte, 0, chunkSize)
	}
	s.buf = s.chunk[:0]
}

// toBytes makes the sink collect its output in a new slice of capacity n.
func (s *sink) toBytes(n int64) {
	s.keep = true
	s.buf = make([]byte, 0, n)
}

func (s *sink) flush() {
	if len(s.buf) == 0 || s.keep {
		return
	}
	for _, h := range s.hs[:s.nh] {
		h.Write(s.buf)
	}
	s.buf = s.buf[:0]
}

// full makes room for n more bytes: a flush when hashing, growth when
// collecting.
func (s *sink) full(n int) {
	if s.keep {
		s.buf = slices.Grow(s.buf, n)
		return
	}
	s.flush()
}

func (s *sink) write(b []byte) {
	if len(b) <= cap(s.buf)-len(s.buf) {
		s.buf = append(s.buf, b...)
		return
	}
	s.writeLong(b)
}

// writeLong writes b, which does not fit in the room left: a run larger
// than half the buffer goes to the hashes directly.
func (s *sink) writeLong(b []byte) {
	if !s.keep && len(b) > chunkSize/2 {
		s.flush()
		for _, h := range s.hs[:s.nh] {
			h.Write(b)
		}
		return
	}
	s.full(len(b))
	s.buf = append(s.buf, b...)
}

func (s *sink) writeString(str string) {
	if len(str) > cap(s.buf)-len(s.buf) {
		s.full(len(str))
	}
	s.buf = append(s.buf, str...)
}

func (s *sink) writeByte(c byte) {
	if len(s.buf) == cap(s.buf) {
		s.full(1)
	}
	s.buf = append(s.buf, c)
}

// writeLen writes the 8-byte big-endian frame length.
func (s *sink) writeLen(n int64) {
	if cap(s.buf)-len(s.buf) < 8 {
		s.full(8)
	}
	s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(n))
}

const hexDigits = "0123456789abcdef"

// escaped writes decoded UTF-8 with RFC 8785 string escaping.
func (s *sink) escaped(b []byte) {
	last := 0
	for i, c := range b {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		s.write(b[last:i])
		s.writeByte('\\')
		if e := shortEscape(c); e != 0 {
			s.writeByte(e)
		} else {
			s.writeString("u00")
			s.writeByte(hexDigits[c>>4])
			s.writeByte(hexDigits[c&15])
		}
		last = i + 1
	}
	s.write(b[last:])
}

// emit writes the canonical form of value i.
func (a *arena) emit(s *sink, i uint32) {
	n := &a.nodes[i]
	switch n.kind {
	case kNull:
		s.writeString("null")
	case kTrue:
		s.writeString("true")
	case kFalse:
		s.writeString("false")
	case kNumber:
		s.write(a.bytesOf(n.val))
	case kString:
		s.writeByte('"')
		a.emitContents(s, n.val)
		s.writeByte('"')
	case kConcat:
		s.writeByte('"')
		for _, k := range a.children(i) {
			a.emitContents(s, a.nodes[k].val)
		}
		s.writeByte('"')
	case kArray:
		s.writeByte('[')
		for j, k := range a.children(i) {
			if j > 0 {
				s.writeByte(',')
			}
			a.emit(s, k)
		}
		s.writeByte(']')
	case kObject:
		s.writeByte('{')
		live := 0
		for _, k := range a.children(i) {
			if a.nodes[k].gone {
				continue
			}
			if live > 0 {
				s.writeByte(',')
			}
			live++
			s.writeByte('"')
			a.emitContents(s, a.nodes[k].key)
			s.writeString(`":`)
			a.emit(s, k)
		}
		s.writeByte('}')
	}
}

// emitContents writes string contents without quotes.
func (a *arena) emitContents(s *sink, sp span) {
	if sp.scratch {
		s.escaped(a.bytesOf(sp))
		return
	}
	s.write(a.bytesOf(sp))
}
