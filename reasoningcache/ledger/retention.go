package ledger

import (
	"sync"
	"time"
)

// Restart barrier rules (fixed by the design, not configurable).
const (
	// BarrierWindow is how long after each start nothing is deleted,
	// measured on the monotonic clock.
	BarrierWindow = 30 * 24 * time.Hour
	// MaxClockDrift is how far the wall clock may move away from the
	// monotonic clock between two samples before the barrier restarts.
	MaxClockDrift = 60 * time.Second
)

// Barrier reset reasons, as Lifecycle reports them.
const (
	BarrierStart         = "start"          // the process started
	BarrierClockBackward = "clock_backward" // the wall clock stepped back
	BarrierClockDrift    = "clock_drift"    // wall and monotonic clocks disagree by more than MaxClockDrift
)

// barrier tracks the restart barrier of one process: deletion is allowed
// only after BarrierWindow of monotonic time without a detected step of
// the wall clock. Clock tracking is per process: every start begins a new
// window, so frequent restarts over-retain, by design.
type barrier struct {
	mu       sync.Mutex
	clock    Clock
	start    time.Duration // monotonic reading when the window (re)started
	lastWall time.Time
	lastMono time.Duration
	reason   string
	resets   int
}

func newBarrier(c Clock) *barrier {
	b := &barrier{clock: c, reason: BarrierStart}
	b.lastWall, b.lastMono = c.Now().Round(0), c.Monotonic()
	b.start = b.lastMono
	return b
}

// sample reads both clocks, restarts the window on a backward step of the
// wall clock or on drift over MaxClockDrift since the previous sample, and
// reports the wall time and whether the window has passed.
func (b *barrier) sample() (wall time.Time, passed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	wall, mono := b.clock.Now().Round(0), b.clock.Monotonic() // Round(0): compare wall readings, not monotonic ones
	dWall, dMono := wall.Sub(b.lastWall), mono-b.lastMono
	switch drift := dWall - dMono; {
	case dWall < 0:
		b.restart(mono, BarrierClockBackward)
	case drift > MaxClockDrift || drift < -MaxClockDrift:
		b.restart(mono, BarrierClockDrift)
	}
	b.lastWall, b.lastMono = wall, mono
	return wall, mono-b.start >= BarrierWindow
}

func (b *barrier) restart(mono time.Duration, reason string) {
	b.start, b.reason = mono, reason
	b.resets++
}

// state returns the barrier's last validated sample without taking a new
// one (inspection must not advance clock state).
func (b *barrier) state() BarrierState {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := BarrierWindow - (b.lastMono - b.start)
	if left < 0 {
		left = 0
	}
	return BarrierState{Remaining: left, Reason: b.reason, Resets: b.resets, SampledAt: b.lastWall}
}

// BarrierState is the restart barrier as of its last sample.
type BarrierState struct {
	// Remaining is how long deletion stays blocked (0: cleanup may delete).
	Remaining time.Duration
	// Reason is why the current window began: BarrierStart,
	// BarrierClockBackward or BarrierClockDrift.
	Reason string
	// Resets counts restarts of the window since the process started.
	Resets int
	// SampledAt is the wall time of the last sample.
	SampledAt time.Time
}
