package reasoningcache

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// Fence is for a model request the cache cannot observe: a direct
// Responses request, or a chat request it could not identify or prepare.
// Before that request goes upstream, every existing scope it may belong to
// is fenced: the positions of their unresolved generations are poisoned
// and their generations advance, so nothing generated on the unobserved
// path can make an older record falsely unique.
//
// model is the upstream model ("" when unknown: every model). When
// callerKnown, only the scopes of that caller (its raw header value,
// possibly empty) are fenced; otherwise those of every caller. Scopes are
// not told apart by credential (the ledger does not keep it apart from the
// scope fingerprint), so a fence covers every credential: stricter than
// necessary, never weaker. An error wraps ErrUnavailable: the request must
// then not be forwarded (503). With the cache disabled it does nothing.
func (e *Engine) Fence(ctx context.Context, model, caller string, callerKnown bool, log *zap.Logger) error {
	if log == nil {
		log = e.log
	}
	f := ledger.FenceFilter{Model: model, AnyCaller: !callerKnown}
	if callerKnown {
		f.Caller = e.callerFP(caller)
	}
	n, err := e.store.Fence(ctx, f, "unobserved_traffic")
	switch {
	case errors.Is(err, ledger.ErrDisabled):
		return nil
	case err != nil:
		return fmt.Errorf("%w: fence: %w", ErrUnavailable, err)
	}
	log.Debug("reasoning cache", zap.String("reason", "fenced"), zap.Int("scopes", n))
	return nil
}
