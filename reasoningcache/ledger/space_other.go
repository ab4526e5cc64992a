//go:build !unix

package ledger

// freeSpace is unknown on this platform; admission then follows the
// database size alone.
func freeSpace(string) int64 { return -1 }
