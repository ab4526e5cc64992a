// Package apierr holds the OpenAI-shaped error that every part of the relay
// returns to clients: {"error":{"message","type","param","code"}} with an
// HTTP status. Messages never contain request bodies, credentials or
// reasoning ciphertext.
package apierr

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Error types used by the relay, as OpenAI names them.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypeNotFound       = "not_found_error"
	TypeServer         = "server_error"
	TypeUpstream       = "upstream_error"
	TypeTimeout        = "timeout_error"
)

// Error is an OpenAI-shaped API error with the HTTP status it is sent with.
type Error struct {
	// Status is the HTTP status code; 0 means 500.
	Status int `json:"-"`
	// Message is a human-readable description without secrets or bodies.
	Message string `json:"message"`
	// Type is the OpenAI error type, e.g. "invalid_request_error".
	Type string `json:"type"`
	// Param names the offending request parameter, or is empty (sent as null).
	Param string `json:"-"`
	// Code is a machine-readable code, or empty (sent as null).
	Code string `json:"-"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	s := e.Type + ": " + e.Message
	if e.Param != "" {
		s += " (param " + e.Param + ")"
	}
	return s
}

// HTTPStatus returns the status code, 500 when unset.
func (e *Error) HTTPStatus() int {
	if e.Status == 0 {
		return http.StatusInternalServerError
	}
	return e.Status
}

// Object returns the inner error object as it appears under "error".
func (e *Error) Object() map[string]any {
	return map[string]any{
		"message": e.Message,
		"type":    e.Type,
		"param":   nullable(e.Param),
		"code":    nullable(e.Code),
	}
}

// JSON returns the wire body {"error":{...}}.
func (e *Error) JSON() []byte {
	b, _ := json.Marshal(map[string]any{"error": e.Object()})
	return b
}

// Write sends e as a JSON response and returns the body it wrote. It sets
// Content-Type and Content-Length and must be called before anything else
// was written.
func Write(w http.ResponseWriter, e *Error) []byte {
	body := e.JSON()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("Content-Encoding")
	w.WriteHeader(e.HTTPStatus())
	_, _ = w.Write(body)
	return body
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// InvalidRequest returns a 400 invalid_request_error naming param.
func InvalidRequest(param, code, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Param: param, Code: code, Message: msg}
}

// New returns an error with the given status, type, code and message.
func New(status int, typ, code, msg string) *Error {
	return &Error{Status: status, Type: typ, Code: code, Message: msg}
}
