package transport

import (
	"sync"
	"time"
)

// Watchdog calls a function once when it has not been kicked for its
// timeout. It is the building block of every idle deadline in the relay:
// kick it on progress, stop it when the guarded phase ends. A Watchdog with
// a timeout <= 0 never fires. It is safe for concurrent use.
type Watchdog struct {
	mu      sync.Mutex
	timeout time.Duration
	timer   *time.Timer
	fired   bool
	stopped bool
}

// NewWatchdog starts a watchdog that calls fire after timeout without a
// Kick. fire runs on its own goroutine and at most once.
func NewWatchdog(timeout time.Duration, fire func()) *Watchdog {
	w := &Watchdog{timeout: timeout}
	if timeout > 0 {
		w.timer = time.AfterFunc(timeout, func() {
			w.mu.Lock()
			if w.stopped || w.fired {
				w.mu.Unlock()
				return
			}
			w.fired = true
			w.mu.Unlock()
			fire()
		})
	}
	return w
}

// Kick renews the deadline: the watchdog fires timeout after the last Kick.
func (w *Watchdog) Kick() {
	if w == nil || w.timer == nil {
		return
	}
	w.mu.Lock()
	if !w.stopped && !w.fired {
		w.timer.Reset(w.timeout)
	}
	w.mu.Unlock()
}

// Stop disarms the watchdog. It reports whether the watchdog had fired.
func (w *Watchdog) Stop() (fired bool) {
	if w == nil || w.timer == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
	return w.fired
}

// ProgressReader kicks a Watchdog every time a Read returns data, so that a
// slow but steady transfer never trips an idle deadline.
type ProgressReader struct {
	// R is the reader read from.
	R interface{ Read([]byte) (int, error) }
	// WD is the watchdog kicked on every read that returns data.
	WD *Watchdog
}

// Read implements io.Reader.
func (p ProgressReader) Read(b []byte) (int, error) {
	n, err := p.R.Read(b)
	if n > 0 {
		p.WD.Kick()
	}
	return n, err
}
