//go:build !unix && !windows

package ledger

import (
	"errors"
	"os"
)

func tryLock(*os.File) error {
	return errors.New("exclusive file locks are not supported on this platform")
}
