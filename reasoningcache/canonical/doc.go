// Package canonical computes the deterministic identity of a request for
// the reasoning cache: the canonical scope, and framed SHA-256 prefix
// digests of the visible history at every message boundary, in one
// bounded pass. It performs no I/O and imports nothing outside the
// standard library.
//
// The cache can only replay what it recognises without guessing, so the
// identity hashes what the client actually sent (its complete message
// envelopes), in one canonical JSON form, and folds in everything else
// that changes what the upstream model sees (the scope).
//
// # Format version 1
//
// FormatID is "caddy-reasoning-relay/canonical/v1". It appears in the
// canonical scope and in every domain tag. Any change to what follows (a
// rule, a tag, the framing or a default limit) is a new version.
//
// # Canonical JSON
//
// Every JSON value is serialized per RFC 8785 (JSON Canonicalization
// Scheme): no whitespace; array order kept; object members sorted by the
// UTF-16 code units of their keys; strings as UTF-8 with only `"` and `\`
// escaped as \" and \\, the control characters U+0008, U+0009, U+000A,
// U+000C, U+000D as \b \t \n \f \r, the other control characters below
// U+0020 as \u00xx (lowercase hex), and nothing else escaped; numbers in
// the ECMAScript Number.prototype.toString form of the IEEE 754 double
// (so 1.0 is 1, 4.50 is 4.5, 1E30 is 1e+30, 0.000001 is 0.000001, 1e-7 is
// 1e-7). Input must be I-JSON. These inputs are refused (see Refusals)
// rather than guessed at: syntax errors, invalid UTF-8, \u escapes that
// form an unpaired surrogate, duplicate keys, and numbers whose decimal
// value differs from the printed double (9007199254740993,
// 333333333.33333329, anything with more than 17 significant digits,
// overflow such as 1e400, underflow such as 1e-400) and negative zero,
// which RFC 8785 would silently print as 0. The serializer never builds
// the whole canonical text: string contents that are already canonical
// (the common case) are referenced in place in the input, and everything
// goes to SHA-256 through an 8 KiB buffer, long runs directly. An
// envelope that is already in canonical form (compact, keys in order,
// nothing to normalize) is hashed from its raw bytes without walking it.
//
// # Envelopes and normalization
//
// A history is a list of raw envelopes in the client's order: the
// messages[] objects of a Chat body (ShapeChat), or the input items of a
// Responses-shaped body (ShapeResponses; a string input is passed as one
// JSON string envelope). Each envelope is hashed complete, with every
// member it carries, including unknown ones at any depth, except for the
// following equivalences, which exist because a client may legitimately
// send either form of the same assistant turn back:
//
// Chat assistant messages (role "assistant"):
//   - content: a string, an array whose elements are all exactly
//     {"type":"text","text":s} (no other members), an empty array, null
//     or an absent member all become one string: the parts' texts
//     concatenated in order, or "". Any other array (a refusal part, a
//     part with an extra member) is kept as sent.
//   - tool_calls: null and [] are the same as absent and are dropped.
//   - a tool call's "index" equal to its position in tool_calls (the
//     number text 0, 1, ...) is redundant and dropped; any other index is
//     kept.
//   - refusal, function_call and audio equal to null, and an empty
//     annotations array, are dropped (the response carries them; sending
//     them back adds nothing).
//   - function.arguments and custom.input are strings and are hashed as
//     strings: they are never parsed, so a reformatted argument string is
//     a different message.
//
// Responses items:
//   - an item with "role" and no "type" gets "type":"message" (the
//     schema's easy form means the same item); a string input becomes
//     {"content":s,"role":"user","type":"message"}.
//   - an assistant turn is a maximal run of assistant message,
//     function_call and custom_tool_call items. In those items "id" and
//     "status" are dropped: a stateless (store:false) client may or may
//     not echo them and they do not reach the model as context. Assistant
//     message content is normalized as in Chat, with exact parts being
//     {"type":"output_text","text":s} optionally with empty "annotations"
//     and "logprobs" arrays (how an output item is echoed). "phase",
//     "call_id", "name", "arguments", "input" and any other member stay.
//
// User, system, developer and tool messages, tool outputs, reasoning items
// and every unknown item are hashed as sent: in particular a user or tool
// message keeps the difference between string content and parts, a tool
// message keeps "name", and a reasoning item keeps its "id".
//
// NormalizeAssistant exposes the canonical form of one assistant envelope
// so a predictor of the next request can reuse exactly these rules.
//
// # Canonical scope
//
// The scope separates requests whose effective model context differs: an
// identical history under another model, reasoning setting, tool list,
// upstream account or caller must never match. It is one canonical JSON
// object with exactly these members (absent values are null unless
// stated):
//
//	caller, credential, relay_token  hex HMAC-SHA-256(secret, label ‖ 0x00 ‖ value),
//	                                 label being the member name; the raw values never appear
//	config                           other translated configuration (an object; absent or
//	                                 null is {}), minus the transport members stream and
//	                                 stream_options
//	endpoint, origin                 the upstream endpoint path and origin
//	format                           FormatID
//	include                          include entries, sorted by byte order, deduplicated
//	                                 (an array, [] when none)
//	limits                           {max_bytes, max_depth, max_messages, max_nodes,
//	                                  max_scratch, scratch_per_node} of the effective Limits
//	max_output_tokens                number, or null when not sent
//	model                            the resolved model
//	openai_beta                      the effective openai-beta header, or null
//	reasoning, tools                 the effective reasoning object and tools array
//	shape                            "chat" or "responses"
//	store                            the effective store flag
//
// Credentials are keyed fingerprints, not plain hashes, so that a stored
// scope reveals nothing guessable about a token; the secret is the
// caller's (the ledger owns it) and must be at least MinSecretLen bytes.
// Transport details (stream, stream_options) are left out because they do
// not change what the model sees. The format and the limits are in the
// scope so that changing either changes the identity rather than silently
// changing a decision.
//
// # Framing and digests
//
// Let frame(x) = u64be(len(x)) ‖ x for canonical text x. Three digests use
// three domain tags, each FormatID followed by "/history", "/scope" or
// "/block" and one 0x00 byte:
//
//	Scope          = SHA-256(scope tag ‖ frame(scope))
//	Boundaries[k]  = SHA-256(history tag ‖ frame(scope) ‖ frame(m1) ‖ … ‖ frame(mk))
//	Fingerprint    = SHA-256(block tag ‖ frame(b1) ‖ … ‖ frame(bj))
//
// where mi is the canonical (normalized) envelope i and b1..bj the
// envelopes of one block. One running SHA-256 state produces every
// boundary digest, so the pass is O(n) in the history size. A block is
// one assistant message (Chat) or one maximal run of assistant items
// (Responses); its StartDigest is the boundary before it and its EndDigest
// the boundary after it. The final state is kept: Digests.Extend computes
// the block an output would form after the history without re-hashing it.
// Digests are stored as 64 lowercase hex digits (Digest.String).
//
// # Limits and refusals
//
// Version 1 defaults (DefaultLimits): 32 MiB of raw scope and history
// bytes together, 6,400 messages, 2,000,000 JSON values (keys not
// counted), depth 64 (a top-level value has depth 1; the scope's own
// members have depth 2) and 16 MiB of scratch per JSON value (48 bytes per
// value plus every decoded string or rewritten number byte). Byte and
// message totals are checked before any parsing; each envelope is parsed
// and measured completely before any of it is sorted, normalized or
// hashed, and parsing stops at the first exceeded limit, so the work and
// memory spent on any input are bounded. Every decision is a function of
// the input bytes and the limits only. A refusal is reported as a
// Refusal with a fixed Reason code: the caller forwards the request
// without the cache; it is not an error.
package canonical
