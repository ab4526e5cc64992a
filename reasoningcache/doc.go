// Package reasoningcache is the reasoning cache engine: canonical identity
// of a request's scope and visible history (package canonical), the
// crash-safe SQLite ledger (package ledger) and, at the package root, the
// planner that decides which earlier assistant turns can be replaced by
// their original Responses output blocks. It imports nothing from Caddy.
//
// # One request
//
// The handler translates a request, then calls Engine.Prepare with the
// client's visible envelopes, the translated input and which input items
// each envelope became. Prepare identifies the history
// (canonical.HistoryDigests, keyed with the ledger's secret), plans, and
// commits a dispatch intent before it returns; only then may the upstream
// request start, with Session.Input. When the response has finished,
// Session.Complete checks and records it and moves the intent to delivery,
// before the handler writes the terminal chunk or the JSON body; after the
// client has it, Session.Delivered resolves the intent. A session ends in
// exactly one of Delivered, Abandon (unknown or interrupted outcome: its
// position is poisoned) or Release (a known failure without output).
//
// # Planning
//
// The plan starts from the newest assistant turn of the history: the
// observations whose end digest equals the turn's, newest first. A
// candidate proposes its recorded ancestry (the plan it was produced with)
// plus itself. Every block must match the turn at its place in the
// current history (start digest, end digest and envelope fingerprint, in
// order), be of the scope's current generation, replayable with the same
// payload, carry no end-conflict marker at its end nor start-poison marker
// at its start, have no unresolved intent at its start other than its own
// producing intent, and have been produced by an accepted model snapshot
// (the scope's latest, or one observed within ModelSnapshotWindow). The
// payload's tool call ids must be those of the translated items it
// replaces. The longest valid prefix of the ancestry is kept, within
// MaxPlanBlocks blocks and ReplayCeiling bytes: a prefix is itself a
// recorded ancestry, so no block is ever replayed beneath a descendant
// that was generated without it, and turns outside the plan are sent as
// the client sent them. Each replaced turn's input range is replaced,
// once, by the original output items exactly as stored.
//
// The ledger's CreateIntent revalidates the whole plan, pins it and
// creates the intent in one commit. A validation failure replans once and
// then dispatches without replay. Even an empty plan gets an intent, so
// that the output is observed.
//
// # Recording
//
// Complete takes the terminal copy of the output as authoritative. For a
// stream, each output_item.done copy must match it: for reasoning items
// the same id, both ciphertexts non-empty and every other field equal (the
// ciphertext bytes may differ; the terminal copy is kept, never mixed with
// the other); any other item equal as a whole. The output must project
// exactly onto what the client received (text, refusal, tool calls in
// order). The client's next envelope is then predicted in the request's
// shape, with tool arguments re-stringified as a JavaScript client does;
// spellings that would not survive that unchanged (unsafe integers, 1.0,
// exponents, -0, ...) refuse the prediction. The observation is committed
// for completed and incomplete responses; a payload is admitted only for a
// completed response of supported items whose reasoning items all carry
// an id and ciphertext, with a non-empty visible envelope. Anything that
// cannot be checked or predicted poisons the request's start position
// instead: an output whose visible envelope is unknown must never let
// another output at that position be replayed. An output with nothing
// visible is not observed.
//
// # Capacity
//
// The memory budget M holds a shared preparation allowance (the ledger's
// hot cache, HotCacheBytes(M), plus the canonical scratch limit plus the
// replay ceiling) and the sessions, at most MaxConcurrent of them. A
// session is charged what its request holds, measured, not a worst case:
// SessionBase + its history bytes + its translated input bytes up front,
// the replayed output bytes once the plan has loaded them, and the
// recorded output as it grows (Session.GrowRecord, in 64 KiB steps; at
// Complete, the output it checks and the payload it commits). A charge
// only grows until the session ends, and the sum of the charges never
// exceeds the capacity. A request that cannot get its up-front charge has
// its start position poisoned and is forwarded without replay or recording;
// if the marker cannot be written, Prepare returns ErrUnavailable and the
// relay answers 503. A plan whose replay cannot be charged is dispatched
// without replay; a recording whose growth cannot be charged stops, and
// Complete poisons the position (record_over_budget). A session nobody
// ends returns its bytes once it is garbage; its intent is poisoned by
// Sweep after IntentTimeout.
//
// # Words
//
// Each word below means one thing in this module's code, comments and
// README; where a user-visible name predates the glossary it is kept and
// noted.
//
//   - turn: one assistant message of the client's visible history, with
//     its tool calls: what Cursor sees and sends back.
//   - block: the original Responses output items (reasoning, message,
//     function calls) that one response produced. Replay puts a block back
//     in place of its turn. A plan is a sequence of blocks, at most
//     MaxPlanBlocks long.
//   - replay: sending blocks upstream in place of turns. Nothing else is
//     called replay; a re-run of one logged request is a bundle.
//   - bundle: a deterministic, hash-verified re-run of one logged request
//     (package internal/bundle; the CLI keeps its name, `caddy
//     reasoning-relay replay export|compare`).
//   - observation: the ledger's record of one finished response: its start
//     and end digests, the envelope fingerprint of what the client saw, its
//     block (when admitted) and the plan it was produced with (its
//     ancestry). Session.Complete records it; "record" is the only verb for
//     that.
//   - recording: the copy of a streamed answer's output items that the
//     handler keeps, up to the entry allowance and charged to the memory
//     budget as it grows, for Complete to check and record.
//   - body log: the adapter's optional bounded log of request and answer
//     bodies (log_bodies, package internal/bodylog). The engine never logs
//     bodies.
//   - intent: the ledger row committed before a request is dispatched; it
//     ends in Delivered, Abandon (its position is poisoned) or Release, or
//     is poisoned when it stays inactive past IntentTimeout (the
//     intent_timeout option, formerly generation_timeout).
//   - generation: a scope's counter, advanced by a fence; an observation of
//     an older generation is never replayed.
//   - sequence: a scope's commit counter (Observation.Seq,
//     ScopeState.LatestSeq).
//   - model snapshot: the dated model name the upstream reports for a
//     response. A snapshot alone is a consistent copy of the ledger made
//     for inspection (`caddy reasoning-relay snapshot`).
//
// # Logging
//
// The engine logs only at Debug, with a fixed "reason" code; never
// envelopes, outputs, ciphertext or credentials.
package reasoningcache
