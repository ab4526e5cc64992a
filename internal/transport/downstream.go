package transport

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ErrBackpressure is returned when one client write stays blocked longer
// than the backpressure deadline.
var ErrBackpressure = errors.New("client did not accept data within the backpressure deadline")

// ErrDeliveryTimeout is returned when delivery did not finish before the
// delivery deadline.
var ErrDeliveryTimeout = errors.New("delivery did not finish within the delivery deadline")

// Downstream writes to the client and flushes after every write, so that
// each frame reaches the client as it is produced. Every write is guarded
// by a backpressure deadline: a client that stops reading cannot hold the
// relay (and the upstream connection) forever. After SetDeliveryDeadline,
// writes are also bounded by that absolute deadline.
type Downstream struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	backpressure time.Duration

	mu       sync.Mutex
	timer    *time.Timer
	stalled  bool
	delivery time.Time
	written  int64
	err      error
}

// NewDownstream wraps w. backpressure <= 0 disables the per-write deadline.
func NewDownstream(w http.ResponseWriter, backpressure time.Duration) *Downstream {
	d := &Downstream{w: w, rc: http.NewResponseController(w), backpressure: backpressure}
	return d
}

// SetDeliveryDeadline bounds every later write by the absolute deadline t.
func (d *Downstream) SetDeliveryDeadline(t time.Time) {
	d.mu.Lock()
	d.delivery = t
	d.mu.Unlock()
}

// Written returns the number of body bytes written so far.
func (d *Downstream) Written() int64 { return d.written }

// Err returns the first write error, if any.
func (d *Downstream) Err() error { return d.err }

// WriteFlush writes p and flushes it to the client. After the first error
// every call returns that error without writing.
func (d *Downstream) WriteFlush(p []byte) error {
	if d.err != nil {
		return d.err
	}
	limit, deliveryBound := d.budget()
	if limit < 0 {
		d.err = ErrDeliveryTimeout
		return d.err
	}
	if limit > 0 {
		d.arm(limit)
	}
	_, err := d.w.Write(p)
	if err == nil {
		err = d.rc.Flush()
		if errors.Is(err, http.ErrNotSupported) {
			err = nil
		}
	}
	if limit > 0 && d.disarm() {
		if deliveryBound {
			err = ErrDeliveryTimeout
		} else {
			err = ErrBackpressure
		}
	}
	if err != nil {
		d.err = fmt.Errorf("writing to client: %w", err)
		return d.err
	}
	d.written += int64(len(p))
	return nil
}

// budget returns how long the next write may block: 0 for unbounded, < 0
// when the delivery deadline has passed. deliveryBound reports whether the
// delivery deadline is the tighter bound.
func (d *Downstream) budget() (limit time.Duration, deliveryBound bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	limit = d.backpressure
	if !d.delivery.IsZero() {
		left := time.Until(d.delivery)
		if left <= 0 {
			return -1, true
		}
		if limit <= 0 || left < limit {
			return left, true
		}
	}
	return limit, false
}

func (d *Downstream) arm(limit time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer == nil {
		d.timer = time.AfterFunc(limit, d.stall)
		return
	}
	d.timer.Reset(limit)
}

// disarm stops the timer and reports whether the write stalled.
func (d *Downstream) disarm() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer.Stop()
	return d.stalled
}

// stall runs when a write blocked too long: a write deadline in the past
// makes the blocked write return.
func (d *Downstream) stall() {
	d.mu.Lock()
	d.stalled = true
	d.mu.Unlock()
	_ = d.rc.SetWriteDeadline(time.Now())
}

// Close stops the timer.
func (d *Downstream) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}
