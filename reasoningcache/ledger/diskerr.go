package ledger

import (
	"errors"
	"syscall"

	"modernc.org/sqlite"
)

// SQLite primary result codes the ledger tells apart.
const (
	sqliteIOErr = 10 // SQLITE_IOERR and its extended codes
	sqliteFull  = 13 // SQLITE_FULL
)

// isCapacityError reports whether err is the storage running out of room
// or failing (SQLITE_FULL, an SQLITE_IOERR code, ENOSPC or EIO): the kind
// of failure that releasing the reserve may cure, as opposed to a
// validation failure or a bug.
func isCapacityError(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteFull, sqliteIOErr:
			return true
		}
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EDQUOT)
}
