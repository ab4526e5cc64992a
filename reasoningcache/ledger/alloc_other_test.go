//go:build !unix

package ledger

import "os"

// allocated cannot tell a sparse file here; it trusts the size.
func allocated(st os.FileInfo) bool { return st.Size() > 0 }
