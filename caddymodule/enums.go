package caddymodule

import (
	"fmt"
	"slices"
	"strings"
)

// Values the relay accepts for reasoning and text settings in its
// configuration (requests are validated by the upstream).
var (
	efforts     = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}
	summaries   = []string{"auto", "concise", "detailed"}
	verbosities = []string{"low", "medium", "high"}
)

// checkEnum accepts "" or one of allowed.
func checkEnum(name, v string, allowed []string) error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return fmt.Errorf("%s %q is not one of %s", name, v, strings.Join(allowed, ", "))
}
