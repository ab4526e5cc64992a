package fakeupstream

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// object is a decoded JSON object (decoded with UseNumber).
type object = map[string]any

// describe names the JSON type of v the way OpenAI's validation messages do.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return "an integer"
		}
		return "a decimal"
	case []any:
		return "an array"
	case object:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// path joins a parameter path and a key: ("tools[0]", "name") -> "tools[0].name".
func path(param, key string) string {
	if param == "" {
		return key
	}
	return param + "." + key
}

// index appends an array index to a parameter path.
func index(param string, i int) string { return fmt.Sprintf("%s[%d]", param, i) }

// errType is OpenAI's invalid_type error.
func errType(param, want string, got any) *apiError {
	return invalidRequest(param, "invalid_type",
		fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", param, want, describe(got)))
}

// errMissing is OpenAI's missing_required_parameter error.
func errMissing(param string) *apiError {
	return invalidRequest(param, "missing_required_parameter",
		fmt.Sprintf("Missing required parameter: '%s'.", param))
}

// errUnknown is OpenAI's unknown_parameter error.
func errUnknown(param string) *apiError {
	return invalidRequest(param, "unknown_parameter", fmt.Sprintf("Unknown parameter: '%s'.", param))
}

// errValue is OpenAI's invalid_value error for an enum.
func errValue(param string, got any, allowed []string) *apiError {
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	list := strings.Join(quoted, ", ")
	if n := len(quoted); n == 2 {
		list = quoted[0] + " and " + quoted[1]
	} else if n > 2 {
		list = strings.Join(quoted[:n-1], ", ") + ", and " + quoted[n-1]
	}
	return invalidRequest(param, "invalid_value",
		fmt.Sprintf("Invalid value: '%v'. Supported values are: %s.", got, list))
}

// checkKeys rejects any key of o not in allowed, in sorted key order so the
// reported parameter is deterministic.
func checkKeys(o object, param string, allowed ...string) *apiError {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return errUnknown(path(param, k))
		}
	}
	return nil
}

// asObject type-checks v as an object.
func asObject(v any, param string) (object, *apiError) {
	o, ok := v.(object)
	if !ok {
		return nil, errType(param, "an object", v)
	}
	return o, nil
}

// optString reads an optional string member; null counts as absent.
func optString(o object, key, param string) (string, bool, *apiError) {
	v, ok := o[key]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, errType(path(param, key), "a string", v)
	}
	return s, true, nil
}

// reqString reads a required, non-empty string member.
func reqString(o object, key, param string) (string, *apiError) {
	s, ok, err := optString(o, key, param)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errMissing(path(param, key))
	}
	if s == "" {
		return "", invalidRequest(path(param, key), "empty_string",
			fmt.Sprintf("Invalid '%s': empty string. Expected a string with minimum length 1, but got an empty string instead.", path(param, key)))
	}
	return s, nil
}

// optBool reads an optional boolean member; null counts as absent.
func optBool(o object, key, param string) (bool, bool, *apiError) {
	v, ok := o[key]
	if !ok || v == nil {
		return false, false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, false, errType(path(param, key), "a boolean", v)
	}
	return b, true, nil
}

// optEnum reads an optional string member restricted to allowed values.
func optEnum(o object, key, param string, allowed ...string) (string, *apiError) {
	s, ok, err := optString(o, key, param)
	if err != nil || !ok {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", errValue(path(param, key), s, allowed)
	}
	return s, nil
}

// optNumber reads an optional number member within [lo, hi].
func optNumber(o object, key, param string, lo, hi float64) *apiError {
	v, ok := o[key]
	if !ok || v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return errType(path(param, key), "a decimal", v)
	}
	f, err := n.Float64()
	if err != nil || f < lo || f > hi {
		return invalidRequest(path(param, key), "invalid_value",
			fmt.Sprintf("Invalid '%s': expected a value between %g and %g, but got %s instead.", path(param, key), lo, hi, n))
	}
	return nil
}

// optInt reads an optional integer member that must be >= min.
func optInt(o object, key, param string, min int64) *apiError {
	v, ok := o[key]
	if !ok || v == nil {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return errType(path(param, key), "an integer", v)
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return errType(path(param, key), "an integer", v)
	}
	if i < min {
		return invalidRequest(path(param, key), "integer_below_min_value",
			fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= %d, but got %d instead.", path(param, key), min, i))
	}
	return nil
}
