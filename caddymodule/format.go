package caddymodule

import "strconv"

// formatBytes renders a byte count the way the Caddyfile accepts it.
func formatBytes(n int64) string {
	const unit = 1024
	switch {
	case n >= unit*unit*unit && n%(unit*unit*unit) == 0:
		return strconv.FormatInt(n/(unit*unit*unit), 10) + "GiB"
	case n >= unit*unit && n%(unit*unit) == 0:
		return strconv.FormatInt(n/(unit*unit), 10) + "MiB"
	case n >= unit && n%unit == 0:
		return strconv.FormatInt(n/unit, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
