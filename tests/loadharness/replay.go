package main

import (
	"net/http"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// verdict is what one upstream request carried back of its conversation's
// earlier turns.
type verdict int

const (
	replayNone    verdict = iota // no reasoning
	replayPartial                // some earlier turns' reasoning, in order, all its own
	replayHit                    // every earlier turn's reasoning, in order: a verified replay hit
	replayWrong                  // reasoning that is not its own conversation's, or out of order
)

// replayIndex finds a request's conversation by the tag that starts its
// last user message.
type replayIndex map[string]*conversation

// newReplayIndex indexes conversations by tag.
func newReplayIndex(convs []*conversation) replayIndex {
	ix := make(replayIndex, len(convs))
	for _, c := range convs {
		ix[c.tag] = c
	}
	return ix
}

// classify judges the reasoning items the fake verified in one upstream
// request (it only accepts ciphertext it issued) against the earlier turns
// of the conversation named by the request's last user message.
func (ix replayIndex) classify(userText string, replayed []fakeupstream.ReplayedReasoning) verdict {
	tag, _, _ := strings.Cut(strings.TrimSpace(userText), " ")
	c := ix[tag]
	if c == nil {
		if len(replayed) > 0 {
			return replayWrong
		}
		return replayNone
	}
	next := 0
	for _, r := range replayed {
		i := next
		for i < len(c.turns) && c.turns[i] != r.ResponseID {
			i++
		}
		if i == len(c.turns) {
			return replayWrong
		}
		next = i + 1
	}
	switch {
	case len(replayed) == 0:
		return replayNone
	case len(replayed) == len(c.turns):
		return replayHit
	default:
		return replayPartial
	}
}

// replayTally counts what the upstream received during one or more relay
// phases.
type replayTally struct {
	Upstream int // upstream requests the fake accepted
	Hits     int // of those, verified replay hits
	Partial  int // of those, carrying only some earlier turns
	Wrong    int // of those, carrying reasoning that was not their own
	Rejected int // upstream requests the fake rejected (e.g. reasoning it could not verify)
}

// add counts one upstream request.
func (t *replayTally) add(status int, v verdict) {
	if status != http.StatusOK {
		t.Rejected++
		return
	}
	t.Upstream++
	switch v {
	case replayHit:
		t.Hits++
	case replayPartial:
		t.Partial++
	case replayWrong:
		t.Wrong++
	}
}

// merge adds o to t.
func (t *replayTally) merge(o replayTally) {
	t.Upstream += o.Upstream
	t.Hits += o.Hits
	t.Partial += o.Partial
	t.Wrong += o.Wrong
	t.Rejected += o.Rejected
}

// tallyFake counts every request the fake recorded against ix.
func tallyFake(fake *fakeupstream.Server, ix replayIndex) replayTally {
	var t replayTally
	fake.Scan(func(r *fakeupstream.Request) {
		t.add(r.Status, ix.classify(r.UserText(), r.Replayed))
	})
	return t
}

// replayPercent is the share of n measured requests that were verified
// replay hits, in percent.
func replayPercent(hits, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(hits) / float64(n)
}
