package reasoningcache

import (
	"encoding/json"
	"slices"
	"sync"
)

// maxSplitBytes bounds the payload outputs itemSplits refers to. They are
// the ledger's hot cache values, so they are usually held there anyway.
const maxSplitBytes = 4 << 20

// itemSplits keeps payloadItems' answer for the payloads a plan replays,
// so that a hit does not scan every replayed output again. An answer is
// kept with the output it was computed from and is used only for that
// very output (the same bytes at the same address and length): the
// ledger hands out a cached output as one shared, never modified buffer,
// and while this keeps it, its memory cannot hold anything else. A
// payload read again into a new buffer (evicted from the hot cache,
// deleted and its id reused) simply misses. The zero value is ready.
type itemSplits struct {
	mu    sync.Mutex
	bytes int
	m     map[int64]itemSplit
}

type itemSplit struct {
	output []byte
	items  []json.RawMessage
	calls  []string
	ok     bool
}

// split returns payloadItems(output) for payload id.
func (c *itemSplits) split(id int64, output []byte) (items []json.RawMessage, calls []string, ok bool) {
	c.mu.Lock()
	e, hit := c.m[id]
	c.mu.Unlock()
	if hit && sameBytes(e.output, output) {
		return slices.Clip(e.items), slices.Clip(e.calls), e.ok
	}
	items, calls, ok = payloadItems(output)
	if len(output) > maxSplitBytes/4 {
		return items, calls, ok // would push out most of the others
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(output) > maxSplitBytes {
		c.m, c.bytes = make(map[int64]itemSplit), 0
	}
	if old, ok := c.m[id]; ok {
		c.bytes -= len(old.output)
	}
	c.m[id] = itemSplit{output: output, items: items, calls: calls, ok: ok}
	c.bytes += len(output)
	return slices.Clip(items), slices.Clip(calls), ok
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
