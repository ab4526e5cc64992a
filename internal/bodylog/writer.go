package bodylog

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
)

// Options configure a Writer.
type Options struct {
	// Dir is the capture directory. It is created 0700 if missing; it must
	// not be a symbolic link.
	Dir string
	// Logger receives the one warning a failing writer emits. Default: a
	// no-op logger.
	Logger *zap.Logger
	// MaxArtifactBytes caps each stored body. Default: 8 MiB.
	MaxArtifactBytes int64
	// WriteTimeout is the longest one file write may take. Default: 2s.
	WriteTimeout time.Duration
	// MaxOutstanding bounds the file writes queued or running. Default: 4.
	MaxOutstanding int
}

// Stats are a Writer's counters.
type Stats struct {
	// Written counts file writes that completed.
	Written int64
	// Merged counts writes that joined a queued write because the queue
	// was full.
	Merged int64
	// Dropped counts writes refused because the queue was full or the
	// writer was disabled or closed.
	Dropped int64
	// Disabled reports whether the writer disabled itself.
	Disabled bool
}

// fileAppend is one append to a file of the capture directory, or a
// deferred one: render, when set, runs on the worker and returns the
// appends to make (a raw body's artifact and index line).
type fileAppend struct {
	rel    string // relative, slash-separated
	create bool   // the file must not exist yet (artifacts)
	data   []byte
	render func() []fileAppend
	size   int64 // the bytes render holds
}

// job is one batch of appends, done in order by the worker; it counts as
// one write against MaxOutstanding. A request hands its finished phases
// over in as few jobs as it can: the two request phases together before
// the upstream is called, the two response phases together when the
// request ends, plus one job per 64 KiB of compressed stream in between.
type job []fileAppend

// size is how many bytes j holds in memory.
func (j job) size() int64 {
	var n int64
	for _, a := range j {
		n += int64(len(a.data)) + a.size
	}
	return n
}

// MaxBatchBytes bounds what a queued write may hold. When MaxOutstanding
// writes are queued or running, a new one is merged into the last queued
// write (still one write, in order) if the two hold at most this much
// together; otherwise it is dropped. Memory held by the queue is so
// bounded by MaxOutstanding × MaxBatchBytes plus one artifact.
const MaxBatchBytes = 16 << 20

// Writer writes captures under one directory through one worker goroutine.
// It is safe for concurrent use and meant to be shared by every handler
// that captures to the same directory.
type Writer struct {
	dir         string
	logger      *zap.Logger
	maxArtifact int64
	timeout     time.Duration
	max         int64

	qmu        sync.Mutex // guards queue, running and closed
	queue      []job
	running    bool
	closed     bool
	wake       chan struct{} // capacity 1: the queue changed
	merged     atomic.Int64
	busySince  atomic.Int64 // unix nanoseconds when the running write began; 0 when idle
	disabled   atomic.Bool
	warned     atomic.Bool
	forgetDirs atomic.Bool // the worker must re-check folders (after Reenable)
	written    atomic.Int64
	dropped    atomic.Int64
	dropWarned atomic.Int64 // unix nanoseconds of the last warning about drops

	done chan struct{}

	// beforeWrite, when set (tests), runs in the worker before each write.
	beforeWrite func(rel string) error
	// dirsMade remembers the day folders already checked (worker only).
	dirsMade map[string]bool
}

// Open prepares dir (0700, no symbolic link) and its bodies folder and
// starts the writer's worker.
func Open(opts Options) (*Writer, error) {
	if opts.Dir == "" {
		return nil, errors.New("capture: no directory")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("capture: %s: %w", opts.Dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("capture: create %s: %w", filepath.Dir(dir), err)
	}
	if err := ensureDir(dir); err != nil {
		return nil, fmt.Errorf("capture: directory %s: %w", dir, err)
	}
	if err := ensureDir(filepath.Join(dir, BodiesDir)); err != nil {
		return nil, fmt.Errorf("capture: directory %s: %w", filepath.Join(dir, BodiesDir), err)
	}
	w := &Writer{
		dir:         dir,
		logger:      opts.Logger,
		maxArtifact: opts.MaxArtifactBytes,
		timeout:     opts.WriteTimeout,
		max:         int64(opts.MaxOutstanding),
		done:        make(chan struct{}),
		dirsMade:    map[string]bool{},
	}
	if w.logger == nil {
		w.logger = zap.NewNop()
	}
	if w.maxArtifact <= 0 {
		w.maxArtifact = DefaultMaxArtifactBytes
	}
	if w.timeout <= 0 {
		w.timeout = DefaultWriteTimeout
	}
	if w.max <= 0 {
		w.max = DefaultMaxOutstanding
	}
	w.wake = make(chan struct{}, 1)
	go w.work()
	return w, nil
}

// Dir returns the absolute capture directory.
func (w *Writer) Dir() string { return w.dir }

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	return Stats{Written: w.written.Load(), Merged: w.merged.Load(), Dropped: w.dropped.Load(), Disabled: w.disabled.Load()}
}

// Disabled reports whether the writer stopped capturing after a failure.
func (w *Writer) Disabled() bool { return w.disabled.Load() }

// submit hands a write to the worker without ever waiting. When
// MaxOutstanding writes are already queued or running it merges j into the
// last queued write if they fit in MaxBatchBytes together. It reports
// false (and counts a drop) when the writer is disabled or closed, when j
// could not be queued or merged, or when the running write has taken
// longer than WriteTimeout (which disables the writer).
func (w *Writer) submit(j job) bool {
	if w.disabled.Load() {
		w.dropped.Add(1)
		return false
	}
	if since := w.busySince.Load(); since != 0 && time.Since(time.Unix(0, since)) > w.timeout {
		w.disable(fmt.Errorf("a write has been blocked for more than %s", w.timeout))
		w.dropped.Add(1)
		return false
	}
	w.qmu.Lock()
	ok := !w.closed
	if ok {
		n := int64(len(w.queue))
		if w.running {
			n++
		}
		switch last := len(w.queue) - 1; {
		case n < w.max:
			w.queue = append(w.queue, j)
		case last >= 0 && w.queue[last].size()+j.size() <= MaxBatchBytes:
			w.queue[last] = append(w.queue[last], j...)
			w.merged.Add(1)
		default:
			ok = false
		}
	}
	closed := w.closed
	w.qmu.Unlock()
	if !ok {
		w.dropped.Add(1)
		if !closed {
			w.warnDrops()
		}
		return false
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// outstanding returns how many writes are queued or running.
func (w *Writer) outstanding() int {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	n := len(w.queue)
	if w.running {
		n++
	}
	return n
}

// next waits for the next write; false once the writer is closed and its
// queue drained.
func (w *Writer) next() (job, bool) {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	for len(w.queue) == 0 {
		if w.closed {
			return nil, false
		}
		w.qmu.Unlock()
		<-w.wake
		w.qmu.Lock()
	}
	j := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	w.running = true
	return j, true
}

// work runs the writes one after the other, so the writes of one file
// stay in order.
func (w *Writer) work() {
	defer close(w.done)
	for {
		j, ok := w.next()
		if !ok {
			return
		}
		if !w.disabled.Load() {
			start := time.Now()
			w.busySince.Store(start.UnixNano())
			err := w.write(j)
			w.busySince.Store(0)
			switch {
			case err != nil:
				w.disable(err)
			case time.Since(start) > w.timeout:
				w.disable(fmt.Errorf("a write took %s, more than %s", time.Since(start).Round(time.Millisecond), w.timeout))
			default:
				w.written.Add(1)
			}
		} else {
			w.dropped.Add(1)
		}
		w.qmu.Lock()
		w.running = false
		w.qmu.Unlock()
	}
}

// write performs one job.
func (w *Writer) write(j job) error {
	if w.beforeWrite != nil && len(j) > 0 && j[0].render == nil {
		if err := w.beforeWrite(j[0].rel); err != nil {
			return err
		}
	}
	if w.forgetDirs.Swap(false) {
		clear(w.dirsMade)
	}
	for _, a := range j {
		if a.render != nil {
			if err := w.write(a.render()); err != nil {
				return err
			}
			continue
		}
		if err := w.appendFile(a.rel, a.create, a.data); err != nil {
			return err
		}
	}
	return nil
}

// appendFile appends data to the file at rel, creating its folder (0700)
// and the file (0600) as needed.
func (w *Writer) appendFile(rel string, create bool, data []byte) error {
	if d := path.Dir(rel); d != "." && !w.dirsMade[d] {
		if err := ensureDir(filepath.Join(w.dir, filepath.FromSlash(d))); err != nil {
			return fmt.Errorf("folder %s: %w", d, err)
		}
		w.dirsMade[d] = true
	}
	f, err := openFile(filepath.Join(w.dir, filepath.FromSlash(rel)), create)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", rel, err)
	}
	return nil
}

// disable stops all capturing and logs one sanitized warning.
func (w *Writer) disable(err error) {
	w.disabled.Store(true)
	if w.warned.CompareAndSwap(false, true) {
		w.logger.Warn("body capture disabled after a failure; requests continue uncaptured until the next reload",
			zap.String("capture_dir", sanitize(w.dir)),
			zap.String("error", sanitize(redact.Error(err))))
	}
}

// dropWarnEvery is the least time between two warnings about drops.
const dropWarnEvery = time.Minute

// warnDrops logs, at most once a minute, that writes are being dropped.
func (w *Writer) warnDrops() {
	now := time.Now().UnixNano()
	last := w.dropWarned.Load()
	if now-last < int64(dropWarnEvery) || !w.dropWarned.CompareAndSwap(last, now) {
		return
	}
	w.logger.Warn("body capture is dropping writes: the capture directory is not keeping up; the requests are unaffected",
		zap.String("capture_dir", sanitize(w.dir)), zap.Int64("dropped_total", w.dropped.Load()))
}

// Reenable turns a disabled writer back on (a configuration reload does
// this), unless a write is still blocked. It reports whether the writer
// is enabled.
func (w *Writer) Reenable() bool {
	if !w.disabled.Load() {
		return true
	}
	if w.busySince.Load() != 0 {
		return false
	}
	w.forgetDirs.Store(true)
	w.warned.Store(false)
	w.disabled.Store(false)
	return true
}

// sanitize keeps a message printable and short.
func sanitize(s string) string {
	if len(s) > 300 {
		s = s[:300]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// Close stops accepting writes and waits up to timeout for the queued
// ones to finish. It is safe to call more than once.
func (w *Writer) Close(timeout time.Duration) error {
	w.qmu.Lock()
	w.closed = true
	w.qmu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-w.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("capture: %s: writes still pending after %s", w.dir, timeout)
	}
}
