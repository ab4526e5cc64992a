package canonical

// kind is the type of a parsed JSON value.
type kind uint8

const (
	kNull kind = iota
	kFalse
	kTrue
	kNumber
	kString
	kArray
	kObject
	// kConcat is a synthetic string: the concatenation of the string
	// values kids[first:first+count]. RFC 8785 escaping is per character,
	// so its canonical form is the parts' escaped contents back to back.
	kConcat
)

// span locates bytes either in the parsed source (verbatim, already in
// canonical escaped form) or in scratch (decoded UTF-8 that is escaped when
// written).
type span struct {
	off, n  uint32
	scratch bool
}

// node is one parsed JSON value. Object members are value nodes carrying
// their key; container children are kids[first:first+count].
type node struct {
	key   span
	val   span // string contents or number text
	first uint32
	count uint32
	size  int64 // canonical byte length, set by measure
	kind  kind
	gone  bool // member removed by normalization
}

// arena holds the parse of one JSON value at a time and is reused, so a
// pass allocates nothing once its buffers have grown.
type arena struct {
	src     []byte
	nodes   []node
	kids    []uint32
	stack   []uint32
	scratch []byte
	charged int64 // scratch bytes charged to the current value
	// unsorted lists, in node order, the objects whose keys may be out of
	// order: parsed objects whose keys did not arrive strictly increasing
	// and every synthesized object. sortAll looks at no other.
	unsorted []uint32
	// verbatim reports that the canonical form of the parsed value is
	// exactly src: no whitespace, keys already in order, every string and
	// number already canonical, and no normalization edit. Every edit
	// clears it.
	verbatim bool
}

func (a *arena) reset(src []byte) {
	a.src = src
	a.verbatim = true
	a.nodes = a.nodes[:0]
	a.kids = a.kids[:0]
	a.stack = a.stack[:0]
	a.unsorted = a.unsorted[:0]
	a.scratch = a.scratch[:0]
	a.charged = 0
}

// bytesOf returns the bytes a span refers to.
func (a *arena) bytesOf(s span) []byte {
	if s.scratch {
		return a.scratch[s.off : s.off+s.n]
	}
	return a.src[s.off : s.off+s.n]
}

// node returns a pointer to node i (valid until the next add).
func (a *arena) node(i uint32) *node { return &a.nodes[i] }

// keyBytes returns the decoded key of member i (keys with escapes are
// always decoded into scratch, so both locations hold plain UTF-8).
func (a *arena) keyBytes(i uint32) []byte { return a.bytesOf(a.nodes[i].key) }

// children returns the child indices of container i.
func (a *arena) children(i uint32) []uint32 {
	n := &a.nodes[i]
	return a.kids[n.first : n.first+n.count]
}

// literal stores s in scratch and returns its span. It is used for
// synthesized keys and values, which are not charged to the limits.
func (a *arena) literal(s string) span {
	a.verbatim = false
	off := len(a.scratch)
	a.scratch = append(a.scratch, s...)
	return span{off: uint32(off), n: uint32(len(s)), scratch: true}
}

// add appends a node and returns its index.
func (a *arena) add(n node) uint32 {
	a.nodes = append(a.nodes, n)
	return uint32(len(a.nodes) - 1)
}

// stringNode synthesizes a string value holding s.
func (a *arena) stringNode(s string) uint32 {
	return a.add(node{kind: kString, val: a.literal(s), size: escapedLen([]byte(s)) + 2})
}

// container synthesizes an array or object over the given children.
func (a *arena) container(k kind, kids []uint32) uint32 {
	a.verbatim = false
	first := len(a.kids)
	a.kids = append(a.kids, kids...)
	i := a.add(node{kind: k, first: uint32(first), count: uint32(len(kids))})
	if k == kObject {
		a.unsorted = append(a.unsorted, i)
	}
	return i
}

// member looks up the live member named key in object i.
func (a *arena) member(i uint32, key string) (uint32, bool) {
	if a.nodes[i].kind != kObject {
		return 0, false
	}
	for _, k := range a.children(i) {
		if !a.nodes[k].gone && string(a.keyBytes(k)) == key {
			return k, true
		}
	}
	return 0, false
}

// isString reports whether node i is a string whose value is s. Canonical
// forms are injective, so comparing them compares the decoded values.
func (a *arena) isString(i uint32, s string) bool {
	n := &a.nodes[i]
	if n.kind != kString {
		return false
	}
	return string(a.bytesOf(n.val)) == s
}

// stringValue returns the canonical contents of string node i, or nil for
// any other kind (only used to compare against known plain names).
func (a *arena) stringValue(i uint32) []byte {
	n := &a.nodes[i]
	if n.kind != kString {
		return nil
	}
	return a.bytesOf(n.val)
}

// remove drops member m (of any object) from the canonical form.
func (a *arena) remove(m uint32) {
	a.verbatim = false
	a.nodes[m].gone = true
}

// replace puts value v in the place of member m of object obj, keeping
// m's key.
func (a *arena) replace(obj, m, v uint32) {
	a.verbatim = false
	a.nodes[v].key = a.nodes[m].key
	for j, k := range a.children(obj) {
		if k == m {
			a.kids[a.nodes[obj].first+uint32(j)] = v
			return
		}
	}
}

// insert adds value v as member key of object obj and restores the key
// order. The caller guarantees obj has no live member named key.
func (a *arena) insert(obj uint32, key string, v uint32) {
	a.nodes[v].key = a.literal(key)
	old := a.children(obj)
	// The members are in order (sortAll ran): v goes before the first
	// key above its own.
	at := len(old)
	for j, k := range old {
		if compareKeys(a.keyBytes(k), []byte(key)) > 0 {
			at = j
			break
		}
	}
	first := len(a.kids)
	a.kids = append(a.kids, old[:at]...)
	a.kids = append(a.kids, v)
	a.kids = append(a.kids, a.children(obj)[at:]...)
	n := &a.nodes[obj]
	n.first, n.count = uint32(first), n.count+1
}
