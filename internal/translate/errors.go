package translate

import (
	"fmt"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
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

func emptyName(param string) *apierr.Error {
	return apierr.InvalidRequest(param, "empty_string",
		fmt.Sprintf("Invalid '%s': empty string. Expected a string with minimum length 1.", param))
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
