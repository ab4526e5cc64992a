package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// utf8BOM is the byte order mark some editors put before a UTF-8 text.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// CheckJSON checks that a client body is well-formed JSON in valid UTF-8,
// as RFC 8259 requires of JSON exchanged between systems, and describes
// what is wrong without quoting the body: a byte order mark, the offset of
// the first byte that breaks the syntax, nesting deeper than the decoder
// allows, or the offset of the first byte that is not UTF-8 (JSON strings
// may hold any Unicode text, but it must be encoded; invalid bytes would
// otherwise be forwarded as they are, or replaced silently).
func CheckJSON(body []byte) *apierr.Error {
	if bytes.HasPrefix(body, utf8BOM) {
		return apierr.InvalidRequest("", "", "We could not parse the JSON body of your request: "+
			"it starts with a UTF-8 byte order mark (byte offset 0); send the JSON without it.")
	}
	if validJSON(body) {
		return nil
	}
	// the slow path only runs to describe what is wrong
	if !json.Valid(body) {
		var v any
		return bodyError(json.Unmarshal(body, &v))
	}
	if !utf8.Valid(body) {
		return apierr.InvalidRequest("", "", fmt.Sprintf(
			"We could not parse the JSON body of your request: it is not valid UTF-8 (first invalid byte at offset %d).", invalidUTF8At(body)))
	}
	return nil
}

// bodyError describes a body that could not be decoded, without quoting
// it. A syntax error names the offset of the offending byte (the decoder
// reports the number of bytes read, one past it).
func bodyError(err error) *apierr.Error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		switch msg := syn.Error(); {
		case strings.HasSuffix(msg, "exceeded max depth"):
			return apierr.InvalidRequest("", "", "We could not parse the JSON body of your request: "+
				"it is nested too deeply (more than 10000 levels of arrays and objects).")
		case msg == "unexpected end of JSON input":
			return apierr.InvalidRequest("", "", "We could not parse the JSON body of your request: it ends before the JSON value is complete.")
		}
		return apierr.InvalidRequest("", "", fmt.Sprintf(
			"We could not parse the JSON body of your request: invalid JSON at byte offset %d.", max(syn.Offset-1, 0)))
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return apierr.InvalidRequest("", "", "The request body must be a JSON object.")
	}
	return apierr.InvalidRequest("", "", "We could not parse the JSON body of your request.")
}

// invalidUTF8At returns the offset of the first byte of b that does not
// belong to a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
