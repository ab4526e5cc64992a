package canonical

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time consumed by the calling OS thread. The
// machine these benchmarks run on is shared, so wall-clock MB/s swings with
// the load; per-thread CPU time does not (the caller locks its thread).
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
