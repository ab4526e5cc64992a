package translate

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// The answer decoders below (decodeResponse, decodeItem, decodePartDone,
// decodeError: valid says raw is known to pass json.Valid) fill upstreamResponse, outputItem, outputPart,
// upstreamError and Usage from raw JSON the way json.Unmarshal does, in
// one walk over the members and without reflection, for the shapes the
// upstream really sends. On anything where a plain walk could decode
// differently from encoding/json (a key that matches a field only by case
// folding, a field given twice, a value of another type than the field's)
// they report false and the caller decodes with json.Unmarshal, so the
// result, errors included, is always encoding/json's.

// decodeResponse decodes a Responses object into r.
func decodeResponse(raw []byte, r *upstreamResponse, valid bool) error {
	if (valid || validJSON(raw)) && fastResponse(raw, r) {
		return nil
	}
	*r = upstreamResponse{}
	return json.Unmarshal(raw, r)
}

// decodeItem decodes an output item into it.
func decodeItem(raw []byte, it *outputItem, valid bool) error {
	if (valid || validJSON(raw)) && fastItem(raw, it) {
		return nil
	}
	*it = outputItem{}
	return json.Unmarshal(raw, it)
}

// decodePartDone decodes an output content part into p.
func decodePartDone(raw []byte, p *outputPart, valid bool) error {
	if (valid || validJSON(raw)) && fastPart(raw, p) {
		return nil
	}
	*p = outputPart{}
	return json.Unmarshal(raw, p)
}

// decodeError decodes an upstream error object into e.
func decodeError(raw []byte, e *upstreamError, valid bool) error {
	if (valid || validJSON(raw)) && fastError(raw, e) {
		return nil
	}
	*e = upstreamError{}
	return json.Unmarshal(raw, e)
}

// fastObject calls fn for each member of the validated object raw whose
// key is one of keys (i is its index). It reports false when raw is not
// an object, when a key repeats or only case-folds to one of keys, or
// when fn does.
func fastObject(raw []byte, keys []string, fn func(i int, v json.RawMessage) bool) bool {
	if !isObject(raw) {
		return false
	}
	var seen uint64
	ok := true
	members(raw, func(k []byte, v json.RawMessage) {
		if !ok {
			return
		}
		for i, want := range keys {
			if string(k) == want {
				ok = seen&(1<<i) == 0 && fn(i, v)
				seen |= 1 << i
				return
			}
		}
		for _, want := range keys {
			if len(k) == len(want) || bytes.ContainsAny(k, "\u017f\u212a") {
				if bytes.EqualFold(k, []byte(want)) {
					ok = false
					return
				}
			}
		}
	})
	return ok
}

var responseKeys = []string{"id", "object", "created_at", "status", "model", "service_tier", "error", "incomplete_details", "output", "usage"}

func fastResponse(raw []byte, r *upstreamResponse) bool {
	return fastObject(raw, responseKeys, func(i int, v json.RawMessage) bool {
		switch i {
		case 0:
			return setString(v, &r.ID)
		case 1:
			return setString(v, &r.Object)
		case 2:
			return setFloat(v, &r.CreatedAt)
		case 3:
			return setString(v, &r.Status)
		case 4:
			return setString(v, &r.Model)
		case 5:
			return setString(v, &r.ServiceTier)
		case 6:
			if isNull(v) {
				return true
			}
			r.Error = new(upstreamError)
			return fastError(v, r.Error)
		case 7:
			if isNull(v) {
				return true
			}
			r.IncompleteDetails = new(struct{ Reason string })
			return fastObject(v, reasonKeys, func(_ int, v json.RawMessage) bool {
				// either spelling sets Reason; the last one wins, as in encoding/json
				return setString(v, &r.IncompleteDetails.Reason)
			})
		case 8:
			return setRawList(v, &r.Output)
		default:
			if isNull(v) {
				return true
			}
			r.Usage = new(Usage)
			return fastUsage(v, r.Usage)
		}
	})
}

// reasonKeys are the spellings of incomplete_details.reason decoded
// directly: encoding/json matches the untagged field Reason by name or by
// case folding, and the upstream sends "reason".
var reasonKeys = []string{"reason", "Reason"}

var errorKeys = []string{"type", "code", "message", "param"}

func fastError(raw []byte, e *upstreamError) bool {
	return fastObject(raw, errorKeys, func(i int, v json.RawMessage) bool {
		switch i {
		case 0:
			return setString(v, &e.Type)
		case 1:
			return setString(v, &e.Code)
		case 2:
			return setString(v, &e.Message)
		default:
			return setString(v, &e.Param)
		}
	})
}

var itemKeys = []string{"type", "id", "call_id", "name", "arguments", "input", "content"}

func fastItem(raw []byte, it *outputItem) bool {
	return fastObject(raw, itemKeys, func(i int, v json.RawMessage) bool {
		switch i {
		case 0:
			return setString(v, &it.Type)
		case 1:
			return setString(v, &it.ID)
		case 2:
			return setString(v, &it.CallID)
		case 3:
			return setString(v, &it.Name)
		case 4:
			return setStringPtr(v, &it.Arguments)
		case 5:
			return setStringPtr(v, &it.Input)
		default:
			return setParts(v, &it.Content)
		}
	})
}

var partDoneKeys = []string{"type", "text", "refusal"}

func fastPart(raw []byte, p *outputPart) bool {
	return fastObject(raw, partDoneKeys, func(i int, v json.RawMessage) bool {
		switch i {
		case 0:
			return setString(v, &p.Type)
		case 1:
			return setString(v, &p.Text)
		default:
			return setString(v, &p.Refusal)
		}
	})
}

var (
	usageKeys         = []string{"input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens"}
	inputDetailKeys   = []string{"cached_tokens", "cache_write_tokens"}
	outputDetailsKeys = []string{"reasoning_tokens"}
)

func fastUsage(raw []byte, u *Usage) bool {
	return fastObject(raw, usageKeys, func(i int, v json.RawMessage) bool {
		switch i {
		case 0:
			return setInt(v, &u.InputTokens)
		case 1:
			d := &u.InputTokensDetails
			return isNull(v) || fastObject(v, inputDetailKeys, func(i int, v json.RawMessage) bool {
				if i == 0 {
					return setInt(v, &d.CachedTokens)
				}
				if isNull(v) {
					return true
				}
				d.CacheWriteTokens = new(int64)
				return setInt(v, d.CacheWriteTokens)
			})
		case 2:
			return setInt(v, &u.OutputTokens)
		case 3:
			return isNull(v) || fastObject(v, outputDetailsKeys, func(_ int, v json.RawMessage) bool {
				return setInt(v, &u.OutputTokensDetails.ReasoningTokens)
			})
		default:
			return setInt(v, &u.TotalTokens)
		}
	})
}

// setString sets *dst to the string v; null leaves it as it is.
func setString(v json.RawMessage, dst *string) bool {
	if isNull(v) {
		return true
	}
	s, ok := unquote(v)
	*dst = s
	return ok
}

// setStringPtr sets *dst to the string v, or nil for null.
func setStringPtr(v json.RawMessage, dst **string) bool {
	if isNull(v) {
		return true
	}
	s, ok := unquote(v)
	*dst = &s
	return ok
}

// setInt sets *dst to the integer v; null leaves it as it is.
func setInt(v json.RawMessage, dst *int64) bool {
	if isNull(v) {
		return true
	}
	if !isNumber(v) {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	*dst = n
	return err == nil
}

// setFloat sets *dst to the number v; null leaves it as it is.
func setFloat(v json.RawMessage, dst *float64) bool {
	if isNull(v) {
		return true
	}
	if !isNumber(v) {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	*dst = f
	return err == nil
}

// setRawList sets *dst to the elements of the array v (nil for null),
// each a copy, as json.RawMessage decodes.
func setRawList(v json.RawMessage, dst *[]json.RawMessage) bool {
	if isNull(v) {
		return true
	}
	if !isArray(v) {
		return false
	}
	list := make([]json.RawMessage, 0, 4)
	buf := append([]byte(nil), v...) // one copy for all elements
	elements(buf, func(_ int, e json.RawMessage) *apierr.Error {
		list = append(list, e)
		return nil
	})
	*dst = list
	return true
}

// setParts decodes the content parts of a message item (nil for null).
func setParts(v json.RawMessage, dst *[]outputPart) bool {
	if isNull(v) {
		return true
	}
	if !isArray(v) {
		return false
	}
	n := 0
	elements(v, func(int, json.RawMessage) *apierr.Error { n++; return nil })
	parts := make([]outputPart, n)
	ok := true
	elements(v, func(j int, e json.RawMessage) *apierr.Error {
		ok = ok && (isNull(e) || fastPart(e, &parts[j]))
		return nil
	})
	*dst = parts
	return ok
}
