package bufpool

import (
	"testing"
)

// TestClasses: Get hands out at least what was asked for and at most an
// eighth more (rounded to the class), and a buffer given back is only
// ever handed out for sizes it holds.
func TestClasses(t *testing.T) {
	for n := MinSize - 3; n < 8<<20; n += n/7 + 1 {
		class, size, ok := classUp(n)
		if n < MinSize {
			if ok {
				t.Fatalf("%d: pooled below MinSize", n)
			}
			continue
		}
		if !ok || size < n || size > n+n/classesPerDoubling+1 {
			t.Fatalf("%d: class %d of size %d (ok %v)", n, class, size, ok)
		}
		// a buffer of any capacity from size up to the next class's
		// goes back to this class, never to a larger one
		if down, ok := classDown(size); !ok || down != class {
			t.Fatalf("%d: a buffer of %d goes back to class %d, want %d", n, size, down, class)
		}
		if down, ok := classDown(size - 1); ok && down >= class {
			t.Fatalf("%d: a buffer of %d goes back to class %d, not below %d", n, size-1, down, class)
		}
		b := Get(n)
		if len(b) != 0 || cap(b) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
	}
}

// TestReuse: a buffer given back is handed out again for a size of its
// class, and never for a larger one.
func TestReuse(t *testing.T) {
	const n = 1<<20 + 5
	b := Get(n)
	b = append(b, 'x')
	Put(b)
	for range 100 { // a garbage collection may empty the pool in between
		c := Get(n)
		if cap(c) < n {
			t.Fatalf("Get(%d) returned cap %d", n, cap(c))
		}
		if &c[:1][0] == &b[0] {
			if bigger := Get(cap(b) + 1); cap(bigger) <= cap(b) {
				t.Fatalf("Get(%d) returned cap %d", cap(b)+1, cap(bigger))
			}
			return
		}
		Put(c)
		Put(b)
	}
	t.Fatal("a buffer given back was never handed out again")
}

// TestSmall: sizes below MinSize are allocated exactly and not pooled.
func TestSmall(t *testing.T) {
	if b := Get(100); cap(b) != 100 {
		t.Fatalf("Get(100): cap %d", cap(b))
	}
	Put(make([]byte, 10)) // ignored
}
