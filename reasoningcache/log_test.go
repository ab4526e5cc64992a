package reasoningcache

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

func TestLogsCarryOnlyReasonCodes(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	e := newEnv(t, Config{Logger: zap.New(core)})
	reqCore, reqLogs := observer.New(zapcore.DebugLevel)
	c := newConv(t, canonical.ShapeChat)
	for k, tu := range mixedTurns[:3] {
		c.user(fmt.Sprint("secret question ", k))
		r := c.request()
		r.Logger = zap.New(reqCore)
		s, err := e.eng.Prepare(context.Background(), r)
		must(t, err)
		out := tu.outcome(k)
		if k == 2 {
			out.Sent.Content = "tampered" // a poison path too
		}
		must(t, s.Complete(context.Background(), out))
		s.Abandon(context.Background(), "Client Gone!") // not a code: recorded as "abandoned"
		c.assistant(k, tu)
		c.results(k, tu)
	}
	if reqLogs.Len() == 0 {
		t.Fatal("the request logger received nothing")
	}
	if logs.Len() != 0 {
		t.Fatalf("%d lines went to the engine logger instead of the request's", logs.Len())
	}
	for _, entry := range reqLogs.All() {
		line := entry.Message
		for k, v := range entry.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		for _, bad := range []string{"gAAAA", "secret question", "sk-test", "relay-token", "alice", "Client Gone", "Hello"} {
			if strings.Contains(line, bad) {
				t.Fatalf("log line leaks %q: %s", bad, line)
			}
		}
		if !reasonCode(entry.ContextMap()["reason"].(string)) {
			t.Fatalf("reason is not a code: %s", line)
		}
	}
}
