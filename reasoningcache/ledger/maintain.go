package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"runtime/debug"
	"time"

	"go.uber.org/zap"
)

// Maintenance timings; variables so that tests can shorten them.
var (
	// maintainInterval is the period of the maintenance loop: disk
	// samples, WAL checkpoints, batched touches, the reserve and the
	// guard's coverage gap.
	maintainInterval = 250 * time.Millisecond
	// cleanupInterval is how often (on the store's monotonic clock)
	// maintenance runs retention cleanup.
	cleanupInterval = time.Hour
)

// maintenance is the store's own background loop, started by Open and
// stopped by Close. Everything it writes goes through the group-commit
// writer; nothing it does is on a request's path.
func (s *Store) maintenance() {
	defer close(s.maintDone)
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("ledger maintenance panicked", zap.Any("error", p), zap.ByteString("stack", debug.Stack()))
		}
	}()
	t := time.NewTicker(maintainInterval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.maintQuit
		cancel()
	}()
	for {
		select {
		case <-s.maintQuit:
			return
		case <-t.C:
			s.maintain(ctx)
		}
	}
}

// maintain is one tick of the maintenance loop.
func (s *Store) maintain(ctx context.Context) {
	logErr := func(what string, err error) {
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("ledger maintenance: "+what, zap.Error(err))
		}
	}
	s.barrier.sample() // a fine-grained sample catches clock steps early
	s.sampleDisk()
	logErr("checkpoint", s.maintainWAL(ctx))
	if s.life.guarded.Load() {
		s.recordGap(ctx)
		return
	}
	if !s.Enabled() {
		return
	}
	logErr("touches", s.flushTouches(ctx))
	s.ensureReserve()
	if mono := s.opts.Clock.Monotonic(); mono-s.lastCleanup >= cleanupInterval {
		s.lastCleanup = mono
		res, err := s.Cleanup(ctx)
		logErr("cleanup", err)
		if res.Deleted > 0 {
			s.log.Info("reasoning cache cleanup", zap.Int("payloads_deleted", res.Deleted))
		}
	}
}

// sampleDisk measures the ledger's files and free space and decides
// admission: new payloads are admitted while database plus WAL stay below
// Options.DiskAdmission and the filesystem has at least the reserve's
// size free.
func (s *Store) sampleDisk() {
	db, wal := fileSize(s.path), fileSize(s.path+"-wal")
	free := freeSpace(filepath.Dir(s.path))
	s.life.dbBytes.Store(db)
	s.life.walBytes.Store(wal)
	s.life.freeBytes.Store(free)
	pressure := db+wal >= s.opts.DiskAdmission || (free >= 0 && free < s.reserve.want)
	if was := s.life.pressure.Swap(pressure); was != pressure {
		s.log.Info("reasoning cache payload admission", zap.Bool("admitting", !pressure),
			zap.Int64("database_bytes", db+wal), zap.Int64("free_bytes", free))
	}
}

// ensureReserve allocates the reserve when it is not held and the
// filesystem has room for it twice over.
func (s *Store) ensureReserve() {
	r := &s.reserve
	if r.size() >= r.want {
		return
	}
	if free := s.life.freeBytes.Load(); free >= 0 && free < 2*r.want {
		return
	}
	err := r.ensure()
	s.life.mu.Lock()
	s.life.reserveErr = ""
	if err != nil {
		s.life.reserveErr = err.Error()
	}
	s.life.mu.Unlock()
}
