// Package bodylog records the bodies of relayed requests (the handler's
// log_bodies option) for replay bundles (package bundle): a bounded,
// best-effort writer that never slows down or fails the request it
// records.
//
// # Layout
//
// Under the capture directory (created 0700):
//
//	relay-capture-YYYY-MM-DD.jsonl                   index, one JSON line per phase (UTC day)
//	bodies/YYYY-MM-DD/<request>-<attempt>-<phase>.gz body artifacts, gzip (0600)
//
// Every request records up to four phases per attempt: client_request,
// upstream_request, upstream_response and client_response. Each index line
// (IndexLine) carries the request ID, attempt, phase, timestamp, model,
// stream flag, status, duration, content type, redacted headers, method and
// URL, and a reference to the body artifact with its SHA-256.
//
// An artifact decompresses to JSON lines (Record): a header record that
// repeats the identity and metadata of its index line, the body as chunk
// records (raw bodies) or frame records with their arrival time relative to
// the start of the phase (event streams), an optional truncation record
// and an end record with the size and SHA-256 of the stored body. The
// stored body is the concatenation of the data of the chunk or frame
// records, after redaction.
//
// # Bounds
//
// Bodies are redacted with package redact (the relay's credentials and
// credential-shaped tokens become [REDACTED], and the number of
// replacements is recorded), stored up to MaxArtifactBytes each and then
// cut with a truncation record. Event-stream frames are encoded on the
// request's goroutine as they arrive (microseconds each); a raw body is
// only copied there, and redacted, hashed, encoded and compressed by the
// worker. File writes go through one worker per directory, as writes
// that each batch several appends (a request costs two: its request phases
// before the upstream is called, its response phases when it ends, plus
// one per 64 KiB of compressed stream in between). At most MaxOutstanding
// writes are queued or running; a write that finds the queue full joins
// the last queued write if both hold at most MaxBatchBytes together, and
// is otherwise dropped (what it held is then missing or recorded as
// incomplete) with a warning at most once a minute. Nothing is queued
// without bound and nothing is retried. A write that fails, or that takes longer than WriteTimeout,
// disables the writer with one sanitized warning; requests go on
// uncaptured until Reenable (a configuration reload).
//
// Folders are created 0700 and files 0600 whatever the umask; files are
// opened with O_NOFOLLOW and artifacts with O_EXCL, and a symbolic link
// anywhere in the layout is refused.
package bodylog
