package main

import (
	"fmt"
	"strconv"
	"strings"
)

// historySize is a history size as given on the command line and in bytes.
type historySize struct {
	label string // as given, e.g. "20KB"
	bytes int
}

// sizeUnits are the suffixes parseSize accepts, longest first: decimal KB
// and MB as in the table, binary KiB and MiB, or plain bytes.
var sizeUnits = []struct {
	suffix string
	mult   int
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1000}, {"MB", 1000 * 1000}, {"B", 1}}

// parseSize parses "20KB", "2MB", "1MiB" or "4096".
func parseSize(s string) (historySize, error) {
	s = strings.TrimSpace(s)
	num, mult := s, 1
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 || n > 64<<20/mult {
		return historySize{}, fmt.Errorf("loadharness: size %q: want a positive number of B, KB, MB, KiB or MiB up to 64MiB", s)
	}
	return historySize{label: s, bytes: n * mult}, nil
}

// parseSizes parses a comma-separated list of sizes, keeping their order.
// "none" is no size at all: the run measures only the burst.
func parseSizes(s string) ([]historySize, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil
	}
	var out []historySize
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		hs, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, hs)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loadharness: -sizes needs at least one size (or none)")
	}
	return out, nil
}

// parseCaches parses "off,on" (or a part of it) into cache settings in
// the given order.
func parseCaches(s string) ([]bool, error) {
	var out []bool
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		switch f {
		case "off":
			out = append(out, false)
		case "on":
			out = append(out, true)
		default:
			return nil, fmt.Errorf("loadharness: -cache: unknown setting %q (want off, on)", f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loadharness: -cache needs off, on or both")
	}
	return out, nil
}
