package caddymodule

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Defaults of the handler's limits and deadlines.
const (
	DefaultUpstream         = "https://api.openai.com/v1"
	DefaultMaxRequestBytes  = 64 << 20
	DefaultMaxResponseBytes = 64 << 20
	DefaultMaxSSEEventBytes = 8 << 20
	DefaultIdleTimeout      = 15 * time.Minute
	DefaultDeliveryTimeout  = 30 * time.Second
	DefaultSSEKeepalive     = 15 * time.Second
	DefaultWriteTimeout     = 60 * time.Second
)

// Handler relays OpenAI Chat Completions requests from clients such as the
// Cursor editor to an OpenAI Responses API upstream and converts the
// answers back, streaming or not.
//
// Routes, relative to whatever path the site sends to the handler:
// `POST …/chat/completions` (classic Chat bodies and Responses-shaped
// bodies, always answered in Chat format), `GET …/models` (the configured
// aliases and models in OpenAI's list shape), `POST …/responses`
// (forwarded as is, under the same guards) and `GET …/health`
// (unauthenticated, for load balancers). Anything else is a 404 in
// OpenAI's error shape. Every response carries `X-Relay-Request-Id`.
//
// Errors are written by the handler itself, in OpenAI's JSON shape
// (`{"error":{"message","type","param","code"}}`) with the matching HTTP
// status, rather than returned as caddyhttp.Error: the clients are OpenAI
// SDKs that parse that body to raise typed errors and show the message,
// whereas Caddy's error handling would answer with an empty body or the
// site's handle_errors routes (HTML or plain text) and lose the type,
// code and param. ServeHTTP therefore returns nil for every error it has
// answered.
//
// The handler sets this placeholder:
//
// Placeholder | Description
// ------------|-------------
// `{http.reasoning_relay.request_id}` | the relay's request ID, as in X-Relay-Request-Id
type Handler struct {
	// Upstream is the base URL of the Responses API; requests go to
	// `<upstream>/responses`. Default: `https://api.openai.com/v1`.
	Upstream string `json:"upstream,omitempty"`

	// APIKey is the upstream credential, usually a placeholder such as
	// `{env.OPENAI_API_KEY}` resolved at provisioning. Required. It is
	// never logged, never sent to clients and never included in errors.
	APIKey string `json:"api_key,omitempty"`

	// RelayTokens are the bearer tokens clients may present in
	// `Authorization: Bearer <token>` (Cursor's "API key"). At least one
	// is required. Placeholders are resolved at provisioning. Tokens are
	// compared in constant time.
	RelayTokens []string `json:"relay_tokens,omitempty"`

	// CallerHeader optionally names a request header whose value
	// partitions the reasoning cache between callers. It is never used
	// for authentication. Default: none.
	CallerHeader string `json:"caller_header,omitempty"`

	// ModelAliases maps a model name a client may ask for to the upstream
	// model and its reasoning defaults. Default: no aliases; model names
	// are passed through.
	ModelAliases map[string]ModelAlias `json:"model_aliases,omitempty"`

	// Models lists additional upstream model names to advertise in
	// `GET /models` besides the aliases and their targets. Default: none.
	Models []string `json:"models,omitempty"`

	// DefaultEffort is the reasoning effort (`none`, `minimal`, `low`,
	// `medium`, `high`, `xhigh`, …) used when neither the request nor its
	// alias sets one. Default: none (the upstream's default applies).
	DefaultEffort string `json:"default_effort,omitempty"`

	// MaxRequestBytes caps a client request body; larger bodies get 413.
	// Default: 64 MiB.
	MaxRequestBytes int64 `json:"max_request_bytes,omitempty"`

	// MaxRequestBytesInFlight is the budget of client body bytes this
	// handler holds at once, across requests. A body counts from the
	// start of its upload (its whole Content-Length at once, or a chunked
	// body as it arrives) until the upstream has answered its request
	// (or the request ends first). A body whose Content-Length does not
	// fit waits up to 5s for room, reading nothing, and then gets 503
	// server_busy with Retry-After; a chunked body gets that 503 as soon
	// as it would exceed the budget. The relay's memory for large bodies
	// peaks at about twice this. At least max_request_bytes. Default:
	// 256 MiB (or max_request_bytes if larger).
	MaxRequestBytesInFlight int64 `json:"max_request_bytes_in_flight,omitempty"`

	// MaxResponseBytes caps a buffered upstream JSON answer or error body.
	// Default: 64 MiB.
	MaxResponseBytes int64 `json:"max_response_bytes,omitempty"`

	// MaxSSEEventBytes caps one upstream server-sent event. Default: 8 MiB.
	MaxSSEEventBytes int64 `json:"max_sse_event_bytes,omitempty"`

	// IdleTimeout is how long the client upload and the upstream may go
	// without sending a byte before the request is abandoned; it is renewed
	// on every byte of progress. Default: 15m.
	IdleTimeout caddy.Duration `json:"idle_timeout,omitempty"`

	// DeliveryTimeout bounds finishing delivery to the client once the
	// upstream answer is complete. Default: 30s.
	DeliveryTimeout caddy.Duration `json:"delivery_timeout,omitempty"`

	// WriteTimeout is the backpressure deadline: the longest one write to
	// the client may stay blocked before the request is abandoned and the
	// upstream request cancelled. Default: 60s.
	WriteTimeout caddy.Duration `json:"write_timeout,omitempty"`

	// SSEKeepalive is how long a streaming response may stay silent before
	// the relay sends an SSE comment line to keep proxies and clients from
	// timing out. Keepalives do not count as upstream progress. 0 disables
	// them. Default: 15s.
	SSEKeepalive *caddy.Duration `json:"sse_keepalive,omitempty"`

	// LogBodies turns on body capture into this directory: for every
	// relayed request, the client request, the upstream request, the
	// upstream response and the client response, with redacted headers,
	// as a JSONL index (relay-capture-YYYY-MM-DD.jsonl) and gzip body
	// artifacts (bodies/), for `caddy reasoning-relay replay export`.
	// The directory is created 0700 and its files 0600; credentials are
	// redacted. Capture is best-effort and bounded: it never slows down or
	// fails a request, and disables itself with one warning if the disk
	// fails. Placeholders are resolved at provisioning. Default: off.
	LogBodies string `json:"log_bodies,omitempty"`

	upstream   *transport.Upstream
	apiKey     string
	tokens     [][sha256.Size]byte
	translator translate.Config
	models     []string
	budget     *bodyBudget
	prep       *prepGate // preparation slots (prepgate.go)
	logger     *zap.Logger
	cache      *CacheApp

	bodyLog    *bodylog.Writer // nil when log_bodies is off
	bodyLogKey string          // this handler's reference in bodyLogWriters
	// secrets are the relay's own credentials (the upstream key and every
	// relay token), scrubbed from everything that leaves the relay:
	// answers, passed-through headers, logs and captures
	secrets []string
}

// ModelAlias is the target of a model alias.
type ModelAlias struct {
	// Model is the upstream model name the alias stands for. Required.
	Model string `json:"model"`
	// Effort is the reasoning effort used when the request sets none.
	Effort string `json:"effort,omitempty"`
	// Summary is the reasoning summary mode (`auto`, `concise`,
	// `detailed`) used when the request sets none.
	Summary string `json:"summary,omitempty"`
	// Verbosity is the text verbosity (`low`, `medium`, `high`) used when
	// the request sets none.
	Verbosity string `json:"verbosity,omitempty"`
	// NoReasoning marks a model that does not reason: its requests are
	// forwarded without forcing `store:false` and encrypted reasoning.
	NoReasoning bool `json:"no_reasoning,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.reasoning_relay",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision resolves placeholders, fills defaults and builds the upstream
// client.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	repl := caddy.NewReplacer()

	if h.Upstream == "" {
		h.Upstream = DefaultUpstream
	}
	h.Upstream = repl.ReplaceAll(h.Upstream, "")
	apiKey := strings.TrimSpace(repl.ReplaceAll(h.APIKey, ""))
	if apiKey == "" {
		return fmt.Errorf("api_key is required (it resolved to an empty value; is the environment variable set?)")
	}
	h.tokens = h.tokens[:0]
	h.secrets = append(h.secrets[:0], apiKey)
	for i, t := range h.RelayTokens {
		t = strings.TrimSpace(repl.ReplaceAll(t, ""))
		if t == "" {
			return fmt.Errorf("relay token %d resolved to an empty value; is the environment variable set?", i+1)
		}
		h.tokens = append(h.tokens, sha256.Sum256([]byte(t)))
		h.secrets = append(h.secrets, t)
	}
	if len(h.tokens) == 0 {
		return fmt.Errorf("at least one relay_token is required")
	}
	up, err := transport.NewUpstream(h.Upstream, apiKey)
	if err != nil {
		return err
	}
	h.upstream = up
	h.apiKey = apiKey

	if h.MaxRequestBytes == 0 {
		h.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if h.MaxRequestBytesInFlight == 0 {
		h.MaxRequestBytesInFlight = max(DefaultMaxRequestBytesInFlight, h.MaxRequestBytes)
	}
	h.budget = &bodyBudget{limit: h.MaxRequestBytesInFlight}
	h.prep = newPrepGate(prepSlots, prepUploadTurn)
	if h.MaxResponseBytes == 0 {
		h.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if h.MaxSSEEventBytes == 0 {
		h.MaxSSEEventBytes = DefaultMaxSSEEventBytes
	}
	if h.IdleTimeout == 0 {
		h.IdleTimeout = caddy.Duration(DefaultIdleTimeout)
	}
	if h.DeliveryTimeout == 0 {
		h.DeliveryTimeout = caddy.Duration(DefaultDeliveryTimeout)
	}
	if h.WriteTimeout == 0 {
		h.WriteTimeout = caddy.Duration(DefaultWriteTimeout)
	}
	if h.SSEKeepalive == nil {
		d := caddy.Duration(DefaultSSEKeepalive)
		h.SSEKeepalive = &d
	}

	h.provisionModels()
	if err := h.provisionCache(ctx); err != nil {
		return err
	}
	return h.provisionBodyLog(ctx)
}

// Validate checks the configuration after provisioning.
func (h *Handler) Validate() error {
	for name, a := range h.ModelAliases {
		if name == "" || a.Model == "" {
			return fmt.Errorf("model alias %q needs a target model", name)
		}
		if err := checkEnum("effort", a.Effort, efforts); err != nil {
			return fmt.Errorf("model alias %q: %w", name, err)
		}
		if err := checkEnum("summary", a.Summary, summaries); err != nil {
			return fmt.Errorf("model alias %q: %w", name, err)
		}
		if err := checkEnum("verbosity", a.Verbosity, verbosities); err != nil {
			return fmt.Errorf("model alias %q: %w", name, err)
		}
	}
	if err := checkEnum("default_effort", h.DefaultEffort, efforts); err != nil {
		return err
	}
	for name, v := range map[string]int64{
		"max_request_bytes": h.MaxRequestBytes, "max_response_bytes": h.MaxResponseBytes,
		"max_sse_event_bytes": h.MaxSSEEventBytes, "max_request_bytes_in_flight": h.MaxRequestBytesInFlight,
	} {
		if v < 0 {
			return fmt.Errorf("%s must not be negative", name)
		}
	}
	if h.MaxRequestBytesInFlight < h.MaxRequestBytes {
		return fmt.Errorf("max_request_bytes_in_flight must be at least max_request_bytes")
	}
	if h.MaxSSEEventBytes > 1<<30 {
		return fmt.Errorf("max_sse_event_bytes must be at most 1GiB")
	}
	for name, d := range map[string]caddy.Duration{
		"idle_timeout": h.IdleTimeout, "delivery_timeout": h.DeliveryTimeout,
		"write_timeout": h.WriteTimeout, "sse_keepalive": *h.SSEKeepalive,
	} {
		if d < 0 {
			return fmt.Errorf("%s must not be negative", name)
		}
	}
	return nil
}

// Cleanup releases idle upstream connections.
func (h *Handler) Cleanup() error {
	if h.upstream != nil {
		h.upstream.CloseIdle()
	}
	h.cleanupBodyLog()
	return nil
}

// ServeHTTP routes a request to one of the relay's endpoints. It never
// calls next: the relay is a terminal handler, like reverse_proxy.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	id := newRequestID()
	w.Header().Set("X-Relay-Request-Id", id)
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		repl.Set("http.reasoning_relay.request_id", id)
	}
	rq := &request{h: h, id: id, w: w, r: r, start: time.Now()}
	defer rq.close()

	path := strings.TrimRight(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		rq.route = "chat"
	case strings.HasSuffix(path, "/responses"):
		rq.route = "responses"
	case strings.HasSuffix(path, "/models"):
		rq.route = "models"
	case strings.HasSuffix(path, "/health"):
		rq.route = "health"
	default:
		rq.fail(apierr.New(http.StatusNotFound, apierr.TypeInvalidRequest, "unknown_url",
			fmt.Sprintf("Invalid URL (%s %s): the relay serves POST /chat/completions, GET /models, POST /responses and GET /health.", r.Method, r.URL.Path)), "unknown_route")
		return nil
	}
	want := http.MethodPost
	if rq.route == "models" || rq.route == "health" {
		want = http.MethodGet
	}
	if r.Method != want && !(want == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", want)
		rq.fail(apierr.New(http.StatusMethodNotAllowed, apierr.TypeInvalidRequest, "method_not_allowed",
			fmt.Sprintf("Method %s is not allowed on %s; use %s.", r.Method, r.URL.Path, want)), "method_not_allowed")
		return nil
	}
	switch rq.route {
	case "chat":
		rq.serveChat()
	case "responses":
		rq.serveResponses()
	case "models":
		if rq.authenticate() {
			rq.serveModels()
		}
	default:
		rq.serveHealth() // unauthenticated, for load balancers
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
