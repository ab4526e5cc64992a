package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
)

// Caps applied while exporting.
const (
	// MaxIndexLineBytes caps one index line.
	MaxIndexLineBytes = 1 << 20
	// MaxArtifactCompressed caps an artifact file before it is read.
	MaxArtifactCompressed = 32 << 20
	// MaxArtifactDecompressed caps what an artifact may decompress to.
	MaxArtifactDecompressed = 64 << 20
)

// ExportOptions select the request to export.
type ExportOptions struct {
	// RequestID is the relay's request ID (X-Relay-Request-Id).
	RequestID string
	// LogsDir is the capture directory (log_bodies).
	LogsDir string
	// Attempt selects an attempt; 0 means the latest.
	Attempt int
}

// Export reads every capture of one request under opts.LogsDir and builds
// its bundle. Integrity problems (a hash, identity or metadata mismatch,
// an unredacted header, a path outside the directory, a symbolic link, a
// file over its cap, a corrupt artifact, a duplicate capture) are errors;
// a missing artifact is recorded in the bundle as an issue and a blocker.
func Export(opts ExportOptions) (*Bundle, error) {
	id := opts.RequestID
	if !bodylog.ValidRequestID(id) {
		return nil, errors.New("export: the request ID must be 1 to 64 letters, digits, '_' or '-'")
	}
	if opts.Attempt < 0 {
		return nil, errors.New("export: --attempt must not be negative")
	}
	dir, realDir, err := captureDir(opts.LogsDir)
	if err != nil {
		return nil, err
	}
	lines, err := readIndexLines(dir, id)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("export: no capture of request %s in %s", id, dir)
	}
	b := &Bundle{Format: BundleFormat, Version: BundleVersion, RequestID: id}
	seen := map[int]bool{}
	for _, l := range lines {
		c := Capture{Index: l}
		if err := loadBody(dir, realDir, &c); err != nil {
			return nil, fmt.Errorf("export: %s attempt %d: %w", l.Phase, l.Attempt, err)
		}
		b.Captures = append(b.Captures, c)
		if !seen[l.Attempt] {
			seen[l.Attempt] = true
			b.Attempts = append(b.Attempts, l.Attempt)
		}
	}
	sort.Ints(b.Attempts)
	sort.SliceStable(b.Captures, func(i, j int) bool {
		a, c := b.Captures[i].Index, b.Captures[j].Index
		if a.Attempt != c.Attempt {
			return a.Attempt < c.Attempt
		}
		return phaseOrder(a.Phase) < phaseOrder(c.Phase)
	})
	b.Attempt = b.Attempts[len(b.Attempts)-1]
	if opts.Attempt != 0 {
		if !seen[opts.Attempt] {
			return nil, fmt.Errorf("export: attempt %d of request %s was not captured (captured: %v)", opts.Attempt, id, b.Attempts)
		}
		b.Attempt = opts.Attempt
	}
	if c := b.Find(b.Attempt, bodylog.UpstreamRequest); c != nil && c.Index.Body != nil && len(c.Issues) == 0 {
		body, err := c.BodyBytes()
		if err != nil {
			return nil, fmt.Errorf("export: upstream request body: %w", err)
		}
		r := &Request{
			Method: c.Index.Method, URL: c.Index.URL, Headers: c.Index.Headers,
			BodySHA256: c.Index.Body.SHA256, BodySize: c.Index.Body.Size,
			ContentType: c.Index.ContentType, Model: c.Index.Model, Stream: c.Index.Stream,
		}
		r.Body, r.BodyBase64 = encodeBytes(body)
		b.Request = r
	}
	b.Completeness = completeness(b)
	return b, nil
}

// phaseOrder ranks phases in the order they happen.
func phaseOrder(p bodylog.Phase) int {
	for i, q := range bodylog.Phases {
		if p == q {
			return i
		}
	}
	return len(bodylog.Phases)
}

// captureDir checks the capture directory: it must exist, be a directory
// and not be a symbolic link. It returns its absolute and real paths.
func captureDir(logsDir string) (string, string, error) {
	if logsDir == "" {
		return "", "", errors.New("export: --logs-dir is required")
	}
	dir, err := filepath.Abs(logsDir)
	if err != nil {
		return "", "", fmt.Errorf("export: %s: %w", logsDir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", "", fmt.Errorf("export: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "", "", fmt.Errorf("export: %s is a symbolic link; pass the real directory", dir)
	}
	if !fi.IsDir() {
		return "", "", fmt.Errorf("export: %s is not a directory", dir)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", fmt.Errorf("export: %w", err)
	}
	return dir, realDir, nil
}

// readIndexLines returns the index lines of request id from every index
// file of dir, in file order. Lines of other requests are skipped
// unparsed; a line of this request that does not decode, that has
// unknown fields, an unknown version or phase, or unredacted headers or
// URL, or that repeats an attempt and phase, is an error.
func readIndexLines(dir, id string) ([]bodylog.IndexLine, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	var names []string
	for _, e := range ents {
		if bodylog.IsIndexName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []bodylog.IndexLine
	dup := map[string]bool{}
	needle := []byte(id)
	exact := []byte(`"requestId":"` + id + `"`)
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("export: index file %s is a symbolic link", name)
		}
		f, _, err := openRegular(p, 1<<62)
		if err != nil {
			return nil, fmt.Errorf("export: index file %s: %w", name, err)
		}
		br := bufio.NewReaderSize(f, 64<<10)
		for n := 1; ; n++ {
			line, tooLong, err := nextLine(br, MaxIndexLineBytes)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("export: index file %s: %w", name, err)
			}
			if !bytes.Contains(line, needle) {
				continue
			}
			if tooLong {
				f.Close()
				return nil, fmt.Errorf("export: %s line %d mentions the request but is longer than %d bytes", name, n, MaxIndexLineBytes)
			}
			l, err := decodeLine(line)
			if err != nil {
				if !bytes.Contains(line, exact) {
					continue // another request's line that merely contains the ID
				}
				f.Close()
				return nil, fmt.Errorf("export: %s line %d: %w", name, n, err)
			}
			if l.RequestID != id {
				continue
			}
			if err := checkLine(&l); err != nil {
				f.Close()
				return nil, fmt.Errorf("export: %s line %d (%s attempt %d): %w", name, n, l.Phase, l.Attempt, err)
			}
			key := fmt.Sprintf("%d/%s", l.Attempt, l.Phase)
			if dup[key] {
				f.Close()
				return nil, fmt.Errorf("export: %s line %d: a second capture of %s attempt %d", name, n, l.Phase, l.Attempt)
			}
			dup[key] = true
			out = append(out, l)
		}
		f.Close()
	}
	return out, nil
}

// nextLine returns the next line without its "\n". A line longer than max
// is returned cut at max with tooLong set (the rest is skipped).
func nextLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			if !tooLong {
				line = append(line, frag[:max-len(line)]...)
				tooLong = true
			}
		} else {
			line = append(line, frag...)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), tooLong, nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			// a last line without "\n" was cut short (a crash or a full
			// disk): the capture it held is missing, not corrupt
			return nil, false, io.EOF
		default:
			return nil, false, err
		}
	}
}

// decodeLine decodes one index line strictly.
func decodeLine(line []byte) (bodylog.IndexLine, error) {
	var l bodylog.IndexLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("index line does not decode: %w", err)
	}
	if dec.More() {
		return l, errors.New("index line has data after its JSON object")
	}
	if l.V != bodylog.Version {
		return l, fmt.Errorf("index line version %d is unknown", l.V)
	}
	if !l.Phase.Valid() || l.Attempt < 1 {
		return l, errors.New("index line has an unknown phase or attempt")
	}
	if l.Body != nil && l.Body.Format != bodylog.FormatRaw && l.Body.Format != bodylog.FormatSSE {
		return l, errors.New("index line has an unknown body format")
	}
	return l, nil
}

// loadBody reads and verifies the artifact of c, if any. A missing or
// incomplete artifact becomes an issue; anything else wrong is an error.
func loadBody(dir, realDir string, c *Capture) error {
	l := &c.Index
	ref := l.Body
	if ref == nil {
		return nil
	}
	if ref.Incomplete != "" {
		c.Issues = append(c.Issues, "incomplete_artifact")
		return nil
	}
	if ref.SHA256 == "" {
		c.Issues = append(c.Issues, "missing_hash")
		return nil
	}
	p, err := containedPath(dir, realDir, ref.Path, l)
	if errors.Is(err, fs.ErrNotExist) {
		c.Issues = append(c.Issues, "missing_artifact")
		return nil
	}
	if err != nil {
		return err
	}
	f, _, err := openRegular(p, MaxArtifactCompressed)
	if errors.Is(err, fs.ErrNotExist) {
		c.Issues = append(c.Issues, "missing_artifact")
		return nil
	}
	if err != nil {
		return fmt.Errorf("artifact %s: %w", ref.Path, err)
	}
	defer f.Close()
	a, err := bodylog.ReadArtifact(f, MaxArtifactDecompressed)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", ref.Path, err)
	}
	if err := bodylog.Verify(l, a); err != nil {
		return fmt.Errorf("artifact %s: %w", ref.Path, err)
	}
	if ref.Format == bodylog.FormatSSE {
		c.Frames = make([]Frame, len(a.Frames))
		for i, fr := range a.Frames {
			c.Frames[i].T = fr.T
			c.Frames[i].Data, c.Frames[i].DataBase64 = encodeBytes(fr.Data)
		}
	} else {
		c.Body, c.BodyBase64 = encodeBytes(a.Body)
	}
	return nil
}

// containedPath resolves an artifact path from an index line under dir:
// the path must have the exact artifact shape for this capture, stay
// inside dir lexically, contain no symbolic link from dir down, and stay
// inside dir's real path once resolved. fs.ErrNotExist means the artifact
// (or its folder) is missing.
func containedPath(dir, realDir, rel string, l *bodylog.IndexLine) (string, error) {
	if err := bodylog.CheckArtifactPath(rel, l.RequestID, l.Attempt, l.Phase); err != nil {
		return "", err
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	r, err := filepath.Rel(dir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", fmt.Errorf("artifact path %s leaves the capture directory", rel)
	}
	cur := dir
	for _, part := range strings.Split(r, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("artifact path %s goes through a symbolic link", rel)
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	rr, err := filepath.Rel(realDir, real)
	if err != nil || rr == ".." || strings.HasPrefix(rr, ".."+string(filepath.Separator)) || filepath.IsAbs(rr) {
		return "", fmt.Errorf("artifact path %s resolves outside the capture directory", rel)
	}
	return p, nil
}
