package ledger

import (
	"container/list"
	"sync"
)

// hotCache is a small LRU of immutable payload outputs keyed by id and
// checked against the row version read with the row's metadata. It holds
// copies of committed data only: evicting or dropping it changes nothing
// durable.
type hotCache struct {
	mu         sync.Mutex
	maxBytes   int64
	maxEntries int
	bytes      int64
	ll         *list.List
	items      map[int64]*list.Element
}

type cacheEntry struct {
	id      int64
	version int64
	value   []byte
}

func newHotCache(maxBytes int64, maxEntries int) *hotCache {
	return &hotCache{maxBytes: maxBytes, maxEntries: maxEntries, ll: list.New(), items: make(map[int64]*list.Element)}
}

func (c *hotCache) get(id, version int64) ([]byte, bool) {
	if c.maxBytes < 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[id]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if e.version != version {
		c.remove(el)
		return nil, false
	}
	c.ll.MoveToFront(el)
	return e.value, true
}

func (c *hotCache) put(id, version int64, value []byte) {
	if c.maxBytes < 0 || int64(len(value)) > c.maxBytes/4 {
		return // never let one value take most of the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.remove(el)
	}
	c.items[id] = c.ll.PushFront(&cacheEntry{id: id, version: version, value: value})
	c.bytes += int64(len(value))
	for c.bytes > c.maxBytes || c.ll.Len() > c.maxEntries {
		c.remove(c.ll.Back())
	}
}

func (c *hotCache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.ll.Remove(el)
	delete(c.items, e.id)
	c.bytes -= int64(len(e.value))
}

func (c *hotCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// drop removes entries by id (their rows were deleted).
func (c *hotCache) drop(ids ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if el, ok := c.items[id]; ok {
			c.remove(el)
		}
	}
}
