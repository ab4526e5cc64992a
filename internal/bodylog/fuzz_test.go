package bodylog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// FuzzReadArtifact feeds arbitrary decompressed content (and the raw
// bytes as gzip) to ReadArtifact: it must never panic, and whatever it
// accepts must be consistent with its end record.
func FuzzReadArtifact(f *testing.F) {
	f.Add([]byte(`{"type":"header","v":1,"requestId":"rr_a","attempt":1,"phase":"client_request","format":"raw"}
{"type":"chunk","data":"hi"}
{"type":"end","size":2,"received":2,"sha256":"8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}
`))
	f.Add([]byte(`{"type":"header","v":1,"format":"sse"}
{"type":"frame","t":5,"b64":"AAE="}
{"type":"truncated","at":2}
{"type":"end","size":2,"frames":1}
`))
	f.Fuzz(func(t *testing.T, plain []byte) {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(plain)
		zw.Close()
		for _, in := range [][]byte{z.Bytes(), plain} {
			a, err := ReadArtifact(bytes.NewReader(in), 1<<20)
			if err != nil {
				continue
			}
			sum := sha256.Sum256(a.Body)
			if a.SHA256 != hex.EncodeToString(sum[:]) || a.End.SHA256 != a.SHA256 || a.End.Size != int64(len(a.Body)) || a.End.Frames != len(a.Frames) {
				t.Fatalf("accepted an inconsistent artifact: %+v", a.End)
			}
		}
	})
}
