package canonical

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync"
)

// Domain tags: each SHA-256 state starts with exactly one of these, so a
// digest of one kind can never equal a digest of another.
const (
	tagHistory = FormatID + "/history\x00"
	tagScope   = FormatID + "/scope\x00"
	tagBlock   = FormatID + "/block\x00"
)

// Digests is the identity of one request: its scope digest, the prefix
// digest at every message boundary and the assistant blocks.
type Digests struct {
	// Shape and Limits are the effective inputs the digests were computed
	// under.
	Shape  Shape
	Limits Limits
	// Refusal is non-nil when the input was deterministically refused;
	// Scope, Boundaries, Kinds and Blocks are then empty.
	Refusal *Refusal
	// Scope is SHA-256(scope tag ‖ u64be(len) ‖ canonical scope): the key
	// of the scope, independent of any history.
	Scope Digest
	// Boundaries[k] is the prefix digest of the first k envelopes;
	// Boundaries[0] covers the scope alone. len(Boundaries) is the number
	// of envelopes plus one.
	Boundaries []Digest
	// Kinds[i] classifies envelope i.
	Kinds []Kind
	// Turns lists the assistant blocks in order.
	Turns []Turn

	state    hash.Hash // state after the last envelope
	bytes    int64     // MaxBytes used
	nodes    int       // MaxNodes remaining
	messages int       // envelopes consumed
}

// Turn is one assistant block: an assistant message (Chat) or a maximal
// run of assistant message, function_call and custom_tool_call items
// (Responses shape), spanning envelopes [First, End).
type Turn struct {
	// First and End delimit the block's envelopes, [First, End).
	First, End int
	// StartDigest is the prefix digest just before the block,
	// Boundaries[First].
	StartDigest Digest
	// EndDigest is the prefix digest including the block, Boundaries[End].
	EndDigest Digest
	// Fingerprint is SHA-256(block tag ‖ for each envelope u64be(len) ‖
	// canonical envelope): the block's content independent of its history
	// and scope.
	Fingerprint Digest
}

// Eligible reports whether the history was identified (not refused).
func (d *Digests) Eligible() bool { return d.Refusal == nil }

// Final returns the prefix digest of the whole history (the zero Digest
// if it was refused).
func (d *Digests) Final() Digest {
	if len(d.Boundaries) == 0 {
		return Digest{}
	}
	return d.Boundaries[len(d.Boundaries)-1]
}

// canon is the reusable working state of one pass.
type canon struct {
	a        arena
	s        sink
	lim      Limits
	nodes    int // MaxNodes remaining
	scopeSrc []byte
	blocks   []Turn  // blocks found so far, copied out at the end
	size     [8]byte // a frame length (here, not on the stack, which a hash would make escape)
}

// retainLimit keeps pathological buffers out of the pool.
const retainLimit = 4 << 20

var canonPool = sync.Pool{New: func() any { return new(canon) }}

func getCanon(lim Limits, nodes int) *canon {
	c := canonPool.Get().(*canon)
	c.lim, c.nodes = lim, nodes
	return c
}

func putCanon(c *canon) {
	if cap(c.a.scratch) > retainLimit || cap(c.a.nodes)*ScratchPerNode > retainLimit || cap(c.scopeSrc) > retainLimit {
		return
	}
	c.a.reset(nil)
	c.blocks = c.blocks[:0]
	c.s.buf = nil
	c.s.hs = [3]hash.Hash{}
	canonPool.Put(c)
}

// envelope parses, measures, sorts and normalizes one envelope and its
// canonical size. Measurement happens completely before sorting or
// emitting anything.
func (c *canon) envelope(shape Shape, env []byte) (root uint32, k Kind, r Reason) {
	a := &c.a
	a.reset(env)
	p := parser{a: a, end: len(env), maxDepth: c.lim.MaxDepth, maxCharge: c.lim.MaxScratch, nodes: &c.nodes}
	root, ok := p.document(1)
	if !ok {
		return 0, 0, p.reason
	}
	if r := a.sortAll(); r != "" {
		return 0, 0, r
	}
	root, k, r = a.normalize(shape, root)
	if r != "" {
		return 0, 0, r
	}
	if a.verbatim {
		// The canonical text is the envelope itself; frame hashes it
		// without walking the nodes.
		a.nodes[root].size = int64(len(env))
	} else {
		a.measure(root)
	}
	return root, k, ""
}

// frame writes u64be(size) ‖ canonical(root) to the given hashes.
func (c *canon) frame(root uint32, hs ...hash.Hash) {
	if c.a.verbatim {
		// The canonical text is the envelope as it is.
		binary.BigEndian.PutUint64(c.size[:], uint64(len(c.a.src)))
		for _, h := range hs {
			h.Write(c.size[:])
			h.Write(c.a.src)
		}
		return
	}
	c.s.toHashes(hs...)
	c.s.writeLen(c.a.nodes[root].size)
	c.a.emit(&c.s, root)
	c.s.flush()
}

func checkArgs(secret []byte, shape Shape, lim Limits) (Limits, error) {
	if len(secret) < MinSecretLen {
		return lim, fmt.Errorf("canonical: secret is %d bytes, want at least %d", len(secret), MinSecretLen)
	}
	if !shape.valid() {
		return lim, fmt.Errorf("canonical: invalid shape %d", shape)
	}
	return lim.Effective()
}

// HistoryDigests identifies a request: it canonicalizes the scope, then
// each envelope of the visible history in order, in one bounded pass, and
// returns the prefix digest at every message boundary and the assistant
// blocks. Envelopes are the client's raw messages[] objects (ShapeChat) or
// input items (ShapeResponses; a string input is one JSON string
// envelope). A deterministic refusal is reported in Digests.Refusal with a
// nil error; errors are reserved for caller mistakes (short secret, bad
// shape or limits, Config members with their own field).
func HistoryDigests(secret []byte, scope Scope, envelopes []json.RawMessage, lim Limits) (*Digests, error) {
	lim, err := checkArgs(secret, scope.Shape, lim)
	if err != nil {
		return nil, err
	}
	d := &Digests{Shape: scope.Shape, Limits: lim}
	refuse := func(r Reason, msg int) (*Digests, error) {
		return &Digests{Shape: scope.Shape, Limits: lim, Refusal: &Refusal{Reason: r, Message: msg}}, nil
	}
	total := scope.rawSize()
	for _, e := range envelopes {
		total += int64(len(e))
	}
	if len(envelopes) > lim.MaxMessages {
		return refuse(ReasonMessages, -1)
	}
	if total > lim.MaxBytes {
		return refuse(ReasonBytes, -1)
	}

	c := getCanon(lim, lim.MaxNodes)
	defer putCanon(c)
	root, r, err := c.buildScope(secret, &scope)
	if err != nil {
		return nil, err
	}
	if r != "" {
		return refuse(r, -1)
	}
	h, sh := sha256.New(), sha256.New()
	h.Write([]byte(tagHistory))
	sh.Write([]byte(tagScope))
	c.frame(root, h, sh)
	sh.Sum(d.Scope[:0])

	d.Boundaries = make([]Digest, len(envelopes)+1)
	d.Kinds = make([]Kind, len(envelopes))
	h.Sum(d.Boundaries[0][:0])
	bh := sha256.New()
	open := -1 // first envelope of the open block
	closeBlock := func(end int) {
		b := Turn{First: open, End: end, StartDigest: d.Boundaries[open], EndDigest: d.Boundaries[end]}
		bh.Sum(b.Fingerprint[:0])
		c.blocks = append(c.blocks, b)
		open = -1
	}
	for i, env := range envelopes {
		if i+1 < len(envelopes) {
			prefetch(envelopes[i+1])
		}
		root, k, r := c.envelope(scope.Shape, env)
		if r != "" {
			return refuse(r, i)
		}
		d.Kinds[i] = k
		if open >= 0 && (!k.Assistant() || scope.Shape == ShapeChat) {
			closeBlock(i)
		}
		if k.Assistant() {
			if open < 0 {
				open = i
				bh.Reset()
				bh.Write([]byte(tagBlock))
			}
			c.frame(root, h, bh)
		} else {
			c.frame(root, h)
		}
		h.Sum(d.Boundaries[i+1][:0])
	}
	if open >= 0 {
		closeBlock(len(envelopes))
	}
	d.Turns = slices.Clone(c.blocks)
	d.state, d.bytes, d.nodes, d.messages = h, total, c.nodes, len(envelopes)
	return d, nil
}

// Extend computes the block that the given assistant envelopes would form
// if appended after the whole history, without re-hashing the history and
// without changing d: StartDigest is d.Final(), EndDigest the prefix digest
// after the envelopes. In the Chat shape exactly one assistant message is
// allowed; in the Responses shape one or more assistant message,
// function_call or custom_tool_call items. The envelopes count against the
// same limits as the history; a refusal is returned as a *Refusal error.
//
// The result describes the envelopes as a block of their own. In the
// Responses shape a history that already ends in assistant items would, in
// a later request, merge with them into one longer run; the planner sees
// that as a different block. Extend does not change d and is safe to call
// from several goroutines at once.
func (d *Digests) Extend(envelopes ...json.RawMessage) (Turn, error) {
	if d.Refusal != nil || d.state == nil {
		return Turn{}, errors.New("canonical: extend: history was not identified")
	}
	if len(envelopes) == 0 {
		return Turn{}, errors.New("canonical: extend: no envelopes")
	}
	if d.Shape == ShapeChat && len(envelopes) != 1 {
		return Turn{}, fmt.Errorf("canonical: extend: a Chat block is one assistant message, got %d envelopes", len(envelopes))
	}
	refuse := func(r Reason, msg int) (Turn, error) {
		return Turn{}, &Refusal{Reason: r, Message: msg}
	}
	total := d.bytes
	for _, e := range envelopes {
		total += int64(len(e))
	}
	if d.messages+len(envelopes) > d.Limits.MaxMessages {
		return refuse(ReasonMessages, -1)
	}
	if total > d.Limits.MaxBytes {
		return refuse(ReasonBytes, -1)
	}
	cl, err := d.state.(hash.Cloner).Clone()
	if err != nil {
		return Turn{}, fmt.Errorf("canonical: extend: clone state: %w", err)
	}
	h := hash.Hash(cl)
	bh := sha256.New()
	bh.Write([]byte(tagBlock))
	c := getCanon(d.Limits, d.nodes)
	defer putCanon(c)
	for i, env := range envelopes {
		root, k, r := c.envelope(d.Shape, env)
		if r != "" {
			return refuse(r, d.messages+i)
		}
		if !k.Assistant() {
			return Turn{}, fmt.Errorf("canonical: extend: envelope %d is %s, not part of an assistant block", i, k)
		}
		c.frame(root, h, bh)
	}
	b := Turn{First: d.messages, End: d.messages + len(envelopes), StartDigest: d.Final()}
	h.Sum(b.EndDigest[:0])
	bh.Sum(b.Fingerprint[:0])
	return b, nil
}

// NormalizeAssistant returns the canonical form of one assistant envelope
// (Chat assistant message; Responses assistant message, function_call or
// custom_tool_call item) after the normalization rules: the exact bytes
// framed into the digests. A predictor can compare it, or Fingerprint, with
// what a client sends back. Refusals are returned as *Refusal errors.
func NormalizeAssistant(shape Shape, envelope json.RawMessage, lim Limits) ([]byte, error) {
	lim, err := lim.Effective()
	if err != nil {
		return nil, err
	}
	if !shape.valid() {
		return nil, fmt.Errorf("canonical: invalid shape %d", shape)
	}
	if int64(len(envelope)) > lim.MaxBytes {
		return nil, &Refusal{Reason: ReasonBytes, Message: -1}
	}
	c := getCanon(lim, lim.MaxNodes)
	defer putCanon(c)
	root, k, r := c.envelope(shape, envelope)
	if r != "" {
		return nil, &Refusal{Reason: r, Message: 0}
	}
	if !k.Assistant() {
		return nil, fmt.Errorf("canonical: normalize: envelope is %s, not an assistant envelope", k)
	}
	return c.bytes(root), nil
}

// Fingerprint returns the fingerprint of the block formed by the given
// assistant envelopes, equal to Block.Fingerprint for the same block in a
// history. Refusals are returned as *Refusal errors.
func Fingerprint(shape Shape, envelopes []json.RawMessage, lim Limits) (Digest, error) {
	var fp Digest
	lim, err := lim.Effective()
	if err != nil {
		return fp, err
	}
	if !shape.valid() {
		return fp, fmt.Errorf("canonical: invalid shape %d", shape)
	}
	if len(envelopes) == 0 || shape == ShapeChat && len(envelopes) != 1 {
		return fp, fmt.Errorf("canonical: fingerprint: %d envelopes is not one %s block", len(envelopes), shape)
	}
	var total int64
	for _, e := range envelopes {
		total += int64(len(e))
	}
	if len(envelopes) > lim.MaxMessages {
		return fp, &Refusal{Reason: ReasonMessages, Message: -1}
	}
	if total > lim.MaxBytes {
		return fp, &Refusal{Reason: ReasonBytes, Message: -1}
	}
	c := getCanon(lim, lim.MaxNodes)
	defer putCanon(c)
	bh := sha256.New()
	bh.Write([]byte(tagBlock))
	for i, env := range envelopes {
		root, k, r := c.envelope(shape, env)
		if r != "" {
			return fp, &Refusal{Reason: r, Message: i}
		}
		if !k.Assistant() {
			return fp, fmt.Errorf("canonical: fingerprint: envelope %d is %s, not part of an assistant block", i, k)
		}
		c.frame(root, bh)
	}
	bh.Sum(fp[:0])
	return fp, nil
}

// Canonicalize returns the RFC 8785 canonical form of one JSON value,
// without any message normalization. Refusals are returned as *Refusal
// errors.
func Canonicalize(value json.RawMessage, lim Limits) ([]byte, error) {
	lim, err := lim.Effective()
	if err != nil {
		return nil, err
	}
	if int64(len(value)) > lim.MaxBytes {
		return nil, &Refusal{Reason: ReasonBytes, Message: -1}
	}
	c := getCanon(lim, lim.MaxNodes)
	defer putCanon(c)
	a := &c.a
	a.reset(value)
	p := parser{a: a, end: len(value), maxDepth: lim.MaxDepth, maxCharge: lim.MaxScratch, nodes: &c.nodes}
	root, ok := p.document(1)
	if !ok {
		return nil, &Refusal{Reason: p.reason, Message: -1}
	}
	if r := a.sortAll(); r != "" {
		return nil, &Refusal{Reason: r, Message: -1}
	}
	a.measure(root)
	return c.bytes(root), nil
}

// CanonicalScope returns the canonical scope text that HistoryDigests
// frames and hashes (for inspection and golden tests; it contains only
// HMAC fingerprints of the credential values). Refusals are returned as
// *Refusal errors.
func CanonicalScope(secret []byte, scope Scope, lim Limits) ([]byte, error) {
	lim, err := checkArgs(secret, scope.Shape, lim)
	if err != nil {
		return nil, err
	}
	if scope.rawSize() > lim.MaxBytes {
		return nil, &Refusal{Reason: ReasonBytes, Message: -1}
	}
	c := getCanon(lim, lim.MaxNodes)
	defer putCanon(c)
	root, r, err := c.buildScope(secret, &scope)
	if err != nil {
		return nil, err
	}
	if r != "" {
		return nil, &Refusal{Reason: r, Message: -1}
	}
	return c.bytes(root), nil
}

// bytes renders value root into a new slice of exactly its canonical size.
func (c *canon) bytes(root uint32) []byte {
	c.s.toBytes(c.a.nodes[root].size)
	c.a.emit(&c.s, root)
	out := c.s.buf
	c.s.buf, c.s.keep = nil, false
	return out
}
