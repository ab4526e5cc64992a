package canonical

import "fmt"

// Reason is a fixed code naming why an input was refused. Codes are stable
// and safe to log: they never contain input bytes.
type Reason string

// Refusal reasons.
const (
	ReasonBytes      Reason = "bytes_limit"      // scope and history exceed MaxBytes
	ReasonMessages   Reason = "messages_limit"   // more than MaxMessages envelopes
	ReasonNodes      Reason = "nodes_limit"      // more than MaxNodes JSON values
	ReasonDepth      Reason = "depth_limit"      // nesting deeper than MaxDepth
	ReasonScratch    Reason = "scratch_limit"    // one value needs more than MaxScratch
	ReasonSyntax     Reason = "invalid_json"     // not exactly one RFC 8259 JSON value
	ReasonUTF8       Reason = "invalid_utf8"     // a string or key is not valid UTF-8
	ReasonSurrogate  Reason = "lone_surrogate"   // a \u escape encodes an unpaired surrogate
	ReasonNumber     Reason = "inexact_number"   // a number RFC 8785 cannot represent exactly
	ReasonDuplicate  Reason = "duplicate_key"    // an object repeats a key (not I-JSON)
	ReasonNotMessage Reason = "invalid_envelope" // an envelope is not an object (or, Responses shape, a string)
)

// Refusal is a deterministic decision not to identify an input: the same
// input under the same limits is always refused for the same reason. It is
// not a failure; the caller forwards the request without the cache.
type Refusal struct {
	// Reason is the fixed refusal code.
	Reason Reason `json:"reason"`
	// Message is the index of the history envelope that triggered the
	// refusal, or -1 when the scope or the totals triggered it.
	Message int `json:"message"`
}

// Error implements error so a Refusal can travel as one (see Extend).
func (r *Refusal) Error() string {
	if r.Message < 0 {
		return fmt.Sprintf("canonical: refused: %s", r.Reason)
	}
	return fmt.Sprintf("canonical: refused: %s at message %d", r.Reason, r.Message)
}
