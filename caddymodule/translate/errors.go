package translate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/apierr"
)

// Error codes used in request validation errors.
const (
	codeUnknownParameter = "unknown_parameter"
	codeUnsupportedParam = "unsupported_parameter"
	codeUnsupportedValue = "unsupported_value"
	codeMissing          = "missing_required_parameter"
	codeInvalidType      = "invalid_type"
	codeInvalidValue     = "invalid_value"
)

func unknownParam(name string) *apierr.Error {
	return apierr.InvalidRequest(name, codeUnknownParameter, fmt.Sprintf("Unknown parameter: '%s'.", name))
}

func unsupportedParam(name, why string) *apierr.Error {
	return apierr.InvalidRequest(name, codeUnsupportedParam,
		fmt.Sprintf("Unsupported parameter: '%s' %s.", name, why))
}

func unsupportedValue(param, msg string) *apierr.Error {
	return apierr.InvalidRequest(param, codeUnsupportedValue, msg)
}

func missing(param string) *apierr.Error {
	return apierr.InvalidRequest(param, codeMissing, fmt.Sprintf("Missing required parameter: '%s'.", param))
}

func invalidType(param, want string) *apierr.Error {
	return apierr.InvalidRequest(param, codeInvalidType,
		fmt.Sprintf("Invalid type for '%s': expected %s.", param, want))
}

func invalidValue(param, msg string) *apierr.Error {
	return apierr.InvalidRequest(param, codeInvalidValue, msg)
}

// bodyError describes a body that could not be decoded, without quoting it.
func bodyError(err error) *apierr.Error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return apierr.InvalidRequest("", "", fmt.Sprintf(
			"We could not parse the JSON body of your request: invalid JSON at byte offset %d.", syn.Offset))
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return apierr.InvalidRequest("", "", "The request body must be a JSON object.")
	}
	return apierr.InvalidRequest("", "", "We could not parse the JSON body of your request.")
}
