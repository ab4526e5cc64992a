// Package bundle builds replay bundles: it turns requests recorded by body
// logging (package bodylog) back into the literal request that went
// upstream, and compares a deliberate re-run of it with what was recorded.
//
// Export reads every index file of a capture directory, every capture of
// one request and its body artifacts, each opened under two containment
// checks (lexical, then real paths), without following symbolic links,
// with a cap on the compressed size before reading and on the
// decompressed size inside the decoder, and cross-checked field by field
// against its index line. It builds a Bundle: the request to replay
// (method, URL, redacted headers, body and its SHA-256), every capture
// found, and a completeness block whose sorted blockers decide whether the
// request can be replayed. Bundles are encoded with sorted keys at every
// level and no time of export, so two exports of the same request are
// byte-identical, and written atomically.
//
// Compare sends a bundle's request again, only when explicitly told to,
// to an endpoint that passes CheckEndpoint, with redacted headers filled
// from environment variables, reads the answer through a BoundedReader and
// reports which properties of the answer match the recorded one (status,
// body hash, JSON shape, content type, and for event streams the event
// type sequence and each event's shape).
package bundle
