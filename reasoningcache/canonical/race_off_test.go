//go:build !race

package canonical

// raceEnabled is true when the race detector is on.
const raceEnabled = false
