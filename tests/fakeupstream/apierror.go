package fakeupstream

import (
	"encoding/json"
	"net/http"
)

// apiError is an OpenAI-shaped error: an HTTP status and the body
// {"error":{"message","type","param","code"}}. Empty Param or Code are
// written as JSON null, as OpenAI does.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string
	Code    string
}

// Error implements error so validation helpers can return it directly.
func (e *apiError) Error() string { return e.Message }

// reason is what Request.Rejected records for this error: the code when
// there is one, otherwise a short fixed label derived from the status.
func (e *apiError) reason() string {
	if e.Code != "" {
		return e.Code
	}
	switch e.Status {
	case http.StatusNotFound:
		return "not_found"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	default:
		return e.Type
	}
}

// body returns the JSON error document.
func (e *apiError) body() []byte {
	var param, code any
	if e.Param != "" {
		param = e.Param
	}
	if e.Code != "" {
		code = e.Code
	}
	b, err := json.Marshal(map[string]any{"error": map[string]any{
		"message": e.Message,
		"type":    e.Type,
		"param":   param,
		"code":    code,
	}})
	if err != nil {
		// Only strings and nil are marshalled; this cannot fail.
		return []byte(`{"error":{"message":"internal","type":"server_error","param":null,"code":null}}`)
	}
	return b
}

// write sends the error with Content-Type application/json.
func (e *apiError) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.body())
}

// invalidRequest builds the common 400 invalid_request_error.
func invalidRequest(param, code, message string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: code, Message: message}
}
