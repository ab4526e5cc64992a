package bodylog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// Frame is one recorded event-stream frame.
type Frame struct {
	// T is the arrival time in microseconds since the phase began.
	T int64
	// Data is the frame as written ("event: …\ndata: …\n\n").
	Data []byte
}

// Artifact is a decoded body artifact.
type Artifact struct {
	// Header is the artifact's header record.
	Header Record
	// Body is the stored body: the chunks, or the frames, concatenated.
	Body []byte
	// Frames are the frames of an event stream.
	Frames []Frame
	// SHA256 is the hex SHA-256 of Body, computed while reading.
	SHA256 string
	// Truncated is set when the artifact holds a truncation record.
	Truncated bool
	// End is the end record.
	End Record
}

// ErrArtifactTooLarge is returned when an artifact decompresses to more
// than the reader's cap.
var ErrArtifactTooLarge = errors.New("artifact decompresses beyond the size cap")

// maxRecordLine bounds one JSON line of an artifact: a chunk of chunkSize
// bytes escaped at worst six bytes each, or one frame of up to the
// artifact cap.
const maxRecordLine = 6*DefaultMaxArtifactBytes + 4096

// ReadArtifact decodes a gzip artifact from r, decompressing at most
// maxDecompressed bytes (ErrArtifactTooLarge past it). It checks the
// record sequence (one header first, chunks or frames as its format says,
// at most one truncation, one end last, nothing after) and that the end
// record's size, frame count and SHA-256 match the body it follows. It
// does not compare the artifact with an index line; see Verify.
func ReadArtifact(r io.Reader, maxDecompressed int64) (*Artifact, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("artifact is not gzip: %w", err)
	}
	zr.Multistream(false)
	lr := &capReader{r: zr, left: maxDecompressed}
	br := bufio.NewReaderSize(lr, 64<<10)
	a := &Artifact{}
	h := sha256.New()
	var body bytes.Buffer
	state := 0 // 0 expect header, 1 body, 2 ended
	for {
		line, err := readLine(br, maxRecordLine)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if state == 2 {
			return nil, errors.New("artifact has data after its end record")
		}
		rec, err := decodeRecord(line)
		if err != nil {
			return nil, err
		}
		if state == 0 {
			if rec.Type != RecordHeader || rec.V != Version {
				return nil, errors.New("artifact does not start with a version 1 header record")
			}
			if rec.Format != FormatRaw && rec.Format != FormatSSE {
				return nil, fmt.Errorf("artifact format %q is unknown", rec.Format)
			}
			a.Header = rec
			state = 1
			continue
		}
		switch rec.Type {
		case RecordChunk, RecordFrame:
			if a.Truncated {
				return nil, errors.New("artifact has data after its truncation record")
			}
			if (rec.Type == RecordFrame) != (a.Header.Format == FormatSSE) {
				return nil, fmt.Errorf("%s record in a %s artifact", rec.Type, a.Header.Format)
			}
			p, err := recordData(rec)
			if err != nil {
				return nil, err
			}
			h.Write(p)
			if rec.Type == RecordFrame {
				a.Frames = append(a.Frames, Frame{T: rec.T, Data: p})
			}
			body.Write(p)
		case RecordTruncated:
			if a.Truncated || rec.At != int64(body.Len()) {
				return nil, errors.New("artifact truncation record does not match its body")
			}
			a.Truncated = true
		case RecordEnd:
			a.End = rec
			state = 2
		default:
			return nil, fmt.Errorf("artifact record type %q is unknown or out of place", rec.Type)
		}
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("artifact gzip: %w", err)
	}
	if state != 2 {
		return nil, errors.New("artifact has no end record (it was cut short)")
	}
	a.Body = body.Bytes()
	a.SHA256 = hex.EncodeToString(h.Sum(nil))
	if a.End.SHA256 != a.SHA256 || a.End.Size != int64(len(a.Body)) || a.End.Frames != len(a.Frames) {
		return nil, errors.New("artifact end record does not match its body (size, frames or SHA-256)")
	}
	return a, nil
}

// decodeRecord decodes one record line; unknown fields are an error.
func decodeRecord(line []byte) (Record, error) {
	var rec Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return Record{}, fmt.Errorf("artifact record does not decode: %w", err)
	}
	return rec, nil
}

// recordData returns the bytes a chunk or frame record holds: Data, or
// B64 decoded (never both).
func recordData(rec Record) ([]byte, error) {
	if rec.B64 == "" {
		return []byte(rec.Data), nil
	}
	if rec.Data != "" {
		return nil, errors.New("artifact record holds both data and b64")
	}
	p, err := base64.StdEncoding.DecodeString(rec.B64)
	if err != nil {
		return nil, fmt.Errorf("artifact record b64: %w", err)
	}
	return p, nil
}

// readLine reads one "\n"-terminated line (without it) of at most max
// bytes. io.EOF means no more lines; a last line without "\n" is an error.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max {
			return nil, errors.New("artifact record is too long")
		}
		if err == nil {
			return line[:len(line)-1], nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(line) > 0 {
			return nil, errors.New("artifact ends inside a record")
		}
		return nil, err
	}
}

// capReader fails with ErrArtifactTooLarge once more than left bytes have
// been read.
type capReader struct {
	r    io.Reader
	left int64
}

// Read reads up to the cap, then fails with ErrArtifactTooLarge once a
// byte beyond it arrives.
func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// one probe byte tells a stream that ends exactly at the cap from one that goes on
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, ErrArtifactTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
