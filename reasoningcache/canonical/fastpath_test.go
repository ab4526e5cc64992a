package canonical

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// orderKeys are keys whose byte order and UTF-16 order disagree, keys that
// are prefixes of each other, escaped spellings of the same key and
// duplicates.
var orderKeys = []string{`a`, `ab`, `b`, `role`, `type`, `content`, `id`, `\u0061`, `\ud83d\ude00`, "\ue000",
	"\uffff", `é`, `\u00e9`, ``, `z\"`, `status`}

// randomObject writes a JSON object (or, below the top, any value) with
// keys drawn from orderKeys in random order, sometimes with white space.
func randomObject(rng *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		if rng.IntN(10) == 0 {
			b.WriteByte(' ')
		}
	}
	if depth > 0 && rng.IntN(3) > 0 {
		b.WriteString([]string{`1`, `"s"`, `null`, `[]`, `[1,{"b":1,"a":2}]`, `"\u00e9"`}[rng.IntN(6)])
		return
	}
	b.WriteByte('{')
	for i := rng.IntN(6); i > 0; i-- {
		ws()
		b.WriteString(`"` + orderKeys[rng.IntN(len(orderKeys))] + `"`)
		ws()
		b.WriteByte(':')
		randomObject(rng, b, depth+1)
		if i > 1 {
			b.WriteByte(',')
		}
	}
	b.WriteByte('}')
}

// The parser's key order check (which lets sortAll skip objects) agrees
// with the definition: every object it does not list in unsorted has
// strictly increasing keys, and the canonical form equals the reference
// serializer's.
func TestKeyOrderCheckedWhileParsing(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	lim, _ := Limits{}.Effective()
	for range 20000 {
		var b strings.Builder
		randomObject(rng, &b, 0)
		in := []byte(b.String())
		c := getCanon(lim, lim.MaxNodes)
		c.a.reset(in)
		p := parser{a: &c.a, end: len(in), maxDepth: lim.MaxDepth, maxCharge: lim.MaxScratch, nodes: &c.nodes}
		if _, ok := p.document(1); !ok {
			t.Fatalf("%s: refused: %s", in, p.reason)
		}
		for i := range c.a.nodes {
			if c.a.nodes[i].kind == kObject && !slices.Contains(c.a.unsorted, uint32(i)) && !c.a.ordered(uint32(i)) {
				t.Fatalf("%s: object %d is out of order but not listed", in, i)
			}
		}
		putCanon(c)
		checkAgainstReference(t, in)
	}
}

// insert puts the new member where sorting would.
func TestInsertKeepsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	plain := []string{"", "a", "ab", "b", "content", "id", "role", "status", "type", "z", "é", "\ue000", "\uffff", "😀"}
	for range 5000 {
		keys := slices.Clone(plain)
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		n := rng.IntN(len(keys))
		have, extra := keys[:n], keys[n]
		var a arena
		a.reset(nil)
		var kids []uint32
		for _, k := range have {
			v := a.stringNode("v")
			a.nodes[v].key = a.literal(k)
			kids = append(kids, v)
		}
		obj := a.container(kObject, kids)
		a.sortObject(obj)
		a.insert(obj, extra, a.stringNode("w"))
		var got []string
		for _, k := range a.children(obj) {
			got = append(got, string(a.keyBytes(k)))
		}
		want := append(slices.Clone(have), extra)
		slices.SortFunc(want, func(x, y string) int { return compareKeys([]byte(x), []byte(y)) })
		if !slices.Equal(got, want) {
			t.Fatalf("insert %q into %q: %q, want %q", extra, have, got, want)
		}
	}
}

// wordStops, the short-string test, agrees with wordClasses.
func TestWordStops(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	interesting := []byte{0, 0x1f, 0x20, '"', '\\', 'b', 'n', 'a', 0x7f, 0x80, 0xc3, 0xff}
	for range 100000 {
		var x uint64
		for j := range 8 {
			c := byte(rng.Uint32())
			if rng.IntN(2) == 0 {
				c = interesting[rng.IntN(len(interesting))]
			}
			x |= uint64(c) << (8 * j)
		}
		c := wordClasses(x)
		if q, s := wordStops(x); q != c.quote || s != c.quote|c.backslash|c.other {
			t.Fatalf("wordStops(%#x) = %#x, %#x; wordClasses %+v", x, q, s, c)
		}
	}
}
