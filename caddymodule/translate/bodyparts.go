package translate

import (
	"encoding/json"
	"fmt"
	"net"
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
	parts := make(net.Buffers, 0, 2*len(r.Fields)+2*len(r.Input)+2)
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

// ReleaseClientBody lets the client's body be collected once the reasoning
// cache has identified the request: it drops History (which references
// the body) and, for a Chat body, copies the field values, which may
// reference it. What remains references the body only where the body is
// what is sent: the input items of a Responses-shaped body, and large
// plain text messages of a Chat body (forwarded as they are).
func (r *Request) ReleaseClientBody() {
	r.History = nil
	if r.Shape != ShapeChat {
		return
	}
	for i, f := range r.Fields {
		r.Fields[i].Value = append(json.RawMessage(nil), f.Value...)
	}
}
