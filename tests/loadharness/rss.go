package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// memStatus is the memory of a process as Linux reports it in
// /proc/<pid>/status, in bytes.
type memStatus struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the resident high-water mark
}

// parseMemStatus reads VmRSS and VmHWM (given in kB) from the text of
// /proc/<pid>/status.
func parseMemStatus(r io.Reader) (memStatus, error) {
	var m memStatus
	var seenRSS, seenPeak bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("loadharness: %s: unexpected value %q", key, strings.TrimSpace(val))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return m, fmt.Errorf("loadharness: %s: unexpected value %q", key, f[0])
		}
		if key == "VmRSS" {
			m.RSS, seenRSS = kb<<10, true
		} else {
			m.Peak, seenPeak = kb<<10, true
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("loadharness: read status: %w", err)
	}
	if !seenRSS || !seenPeak {
		return m, fmt.Errorf("loadharness: status lacks VmRSS or VmHWM")
	}
	return m, nil
}

// readMemStatus reads the memory of process pid.
func readMemStatus(pid int) (memStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, fmt.Errorf("loadharness: memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	return parseMemStatus(f)
}

// resetPeak resets the resident high-water mark of process pid to its
// current RSS (writing 5 to /proc/<pid>/clear_refs, Linux 4.0 and later).
func resetPeak(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("loadharness: reset peak RSS of pid %d: %w", pid, err)
	}
	return nil
}

// mib formats bytes in MiB with one decimal.
func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
