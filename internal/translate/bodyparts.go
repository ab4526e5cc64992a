package translate

import (
	"encoding/json"
	"fmt"
	"net"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bufpool"
)

// Constant parts of every upstream body, shared by all requests and never
// written to.
var (
	partOpen  = []byte{'{'}
	partComma = []byte{','}
	partInput = []byte(`"input":[`)
	partClose = []byte{']', '}'}
)

// BodyParts returns the upstream Responses request JSON that Body encodes,
// as a list of parts that reference Fields and Input instead of copying
// them, and its total length. Sending the parts (net.Buffers) spares the
// relay one copy of a large request; bytes.Join(parts, nil) equals Body().
func (r *Request) BodyParts() (net.Buffers, int64, error) {
	parts := make(net.Buffers, 0, 3*len(r.Fields)+2*len(r.Input)+3) // key, value and comma per field
	var n int64
	add := func(p []byte) {
		parts = append(parts, p)
		n += int64(len(p))
	}
	add(partOpen)
	for _, f := range r.Fields {
		if f.Key == "input" {
			return nil, 0, fmt.Errorf("translate: body: field %q duplicates the input items", f.Key)
		}
		if len(f.Value) == 0 {
			return nil, 0, fmt.Errorf("translate: body: field %q has no value", f.Key)
		}
		add(append(appendString(nil, f.Key), ':'))
		add(f.Value)
		add(partComma)
	}
	add(partInput)
	for i, it := range r.Input {
		if len(it) == 0 {
			return nil, 0, fmt.Errorf("translate: body: input item %d is empty", i)
		}
		if i > 0 {
			add(partComma)
		}
		add(it)
	}
	add(partClose)
	return parts, n, nil
}

// DropInput lets the input items go once the upstream has accepted the
// request (they are about as large as the history): Body and BodyParts
// then have no input to send. The field values of a Responses-shaped body,
// which are bytes of the client's body, are copied, so that the client's
// body can go too.
func (r *Request) DropInput() {
	r.Input = nil
	if r.Shape == ShapeChat {
		return // ReleaseClientBody copied them
	}
	for i, f := range r.Fields {
		r.Fields[i].Value = append(json.RawMessage(nil), f.Value...)
	}
}

// ReleaseClientBody lets the client's body be collected once the reasoning
// cache has identified the request: it drops History (which references
// the body) and, for a Chat body, copies the field values, which may
// reference it, and the large plain text messages that were forwarded as
// the client sent them, unless they make up most of the body (then
// keeping the body costs less than copying them). The input items of a
// Responses-shaped body are the body's own bytes and stay as they are.
//
// It reports whether the request references no byte of the client's body
// any more (a Chat body none of whose messages stays aliased), so that the
// caller may reuse the body's buffer at once.
func (r *Request) ReleaseClientBody() (bodyFree bool) {
	r.History = nil
	aliased, size := r.aliased, r.clientSize
	r.aliased, r.clientSize = nil, 0
	if r.Shape != ShapeChat {
		return false
	}
	for i, f := range r.Fields {
		r.Fields[i].Value = append(json.RawMessage(nil), f.Value...)
	}
	r.callerStore = copyRaw(r.callerStore)
	r.callerInclude = copyRaw(r.callerInclude)
	n := 0
	for _, a := range aliased {
		n += len(a)
	}
	if n == 0 {
		return true
	}
	if n > size/2 {
		return false
	}
	for i, it := range r.Input {
		for _, a := range aliased {
			if len(it) > 0 && len(it) == len(a) && &it[0] == &a[0] {
				r.Input[i] = append(json.RawMessage(nil), it...)
				break
			}
		}
	}
	return true
}

// copyRaw returns a copy of v (nil for nil).
func copyRaw(v json.RawMessage) json.RawMessage {
	if v == nil {
		return nil
	}
	return append(json.RawMessage{}, v...)
}

// Recycle gives the buffer the input items of a Chat body were built in
// back to package bufpool, for the next request to build its items in,
// and forgets the items, the history and the caller's storage values
// (which may be bytes of the client's body). The caller promises that nothing
// references an input item any more: not Input, not the parts BodyParts
// returned (an upstream transport may read them until it closes the
// body), not a cache session. Calling it more than once is harmless.
func (r *Request) Recycle() {
	out := r.out
	r.out, r.Input, r.History, r.aliased = nil, nil, nil, nil
	r.callerStore, r.callerInclude = nil, nil
	if out != nil {
		bufpool.Put(out)
	}
}
