// Package transport moves bytes between the client, the relay and the
// upstream Responses API under the relay's guards: request and response
// size caps, an SSE reader with a per-event cap, idle deadlines renewed on
// progress, a backpressure deadline per blocked client write, and SSE
// keepalive comments. It knows nothing about the JSON it carries.
//
// All deadlines are measured with timers (monotonic clock), so wall-clock
// jumps neither fire nor postpone them.
package transport
