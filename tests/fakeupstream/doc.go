// Package fakeupstream is a strict, in-process fake of the OpenAI Responses
// API (POST {base}/responses) for end-to-end tests of the reasoning relay.
//
// The fake validates every request the way the real service does (unknown
// top-level parameters, flat tool definitions, input item shapes, matching
// call ids, known include values) and answers with the wire format of the
// Responses API: full Response objects for stream:false, and for
// stream:true an SSE stream framed as "event: <type>\ndata: <json>\n\n" with
// increasing sequence numbers and the documented event order.
//
// Reasoning items carry an opaque, verifiable encrypted_content bound to the
// reasoning item id, the response id and the API key, so a relay that drops,
// alters, re-labels or cross-replays a reasoning item gets the same kind of
// error OpenAI returns (404 item not found, 400 invalid_encrypted_content).
//
// What a request is answered with is chosen by a script; the default script
// reads a token such as "[[parallel_tools]]" or "[[slow:50ms]]" from the last
// user message (see ParseScenario, DefaultScript and the Kind constants).
// A request whose input ends with tool outputs is answered with the text
// "tool results received: <call ids>". Unknown tokens are answered with 400
// fake_invalid_scenario so that a typo fails the test.
//
// Typical use:
//
//	fake := fakeupstream.New(fakeupstream.Options{APIKey: "sk-upstream"})
//	srv := httptest.NewServer(fake)
//	defer srv.Close()
//	// point the relay at srv.URL+"/v1", send "hi [[tool]]" through it, then:
//	reqs := fake.Requests() // bodies, headers, verified replayed reasoning, rejections
//
// The command cmd/fake-upstream serves the same handler on a TCP address.
package fakeupstream
