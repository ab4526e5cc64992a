// Package translate converts between the two OpenAI wire formats the relay
// speaks: Chat Completions (what the Cursor editor sends and expects back)
// and the Responses API (what the relay forwards upstream).
//
// Translate turns a body posted to /chat/completions, either a classic Chat
// body ("messages") or a Responses-shaped body ("input"), into a Request
// whose Body is the upstream Responses request. ConvertCompletion converts
// a non-streaming Responses object into a chat.completion (ChatCompletion
// also encodes it), and a Stream (NewStream) converts an upstream Responses
// SSE stream into chat.completion.chunk frames event by event.
//
// The package is pure: no network, no logging, no Caddy. Errors meant for
// clients are *apierr.Error values that never contain request bodies.
package translate
