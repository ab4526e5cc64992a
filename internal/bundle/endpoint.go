package bundle

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
)

// TrustedEndpoint is the one endpoint a replay may be sent to without
// --url: the OpenAI Responses API.
const TrustedEndpoint = "https://api.openai.com/v1/responses"

// CheckEndpoint validates where a replay is sent. The URL must be absolute
// HTTPS (plain HTTP only to a loopback address), without credentials, a
// fragment or a query parameter whose name looks sensitive. Unless
// authorized (the operator named it with --url), it must be
// TrustedEndpoint. Errors never repeat the URL's query values.
func CheckEndpoint(raw string, authorized bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("endpoint: the URL does not parse")
	}
	if strings.Contains(raw, "#") {
		return nil, errors.New("endpoint: the URL must not carry a fragment")
	}
	if u.User != nil {
		return nil, errors.New("endpoint: the URL must not carry credentials")
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, errors.New("endpoint: the URL must be absolute")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return nil, errors.New("endpoint: plain HTTP is allowed only to a loopback address; use https")
		}
	default:
		return nil, fmt.Errorf("endpoint: scheme %q is not https", u.Scheme)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, errors.New("endpoint: the URL query does not parse")
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if redact.SensitiveQueryName(k) {
			return nil, fmt.Errorf("endpoint: query parameter %q looks like a credential; credentials go in --header-env", k)
		}
	}
	if !authorized && u.String() != TrustedEndpoint {
		return nil, fmt.Errorf("endpoint: %s is not the trusted endpoint %s; pass --url to authorize it", redact.URL(u.String()), TrustedEndpoint)
	}
	return u, nil
}

// isLoopback reports whether host is localhost or a loopback IP.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
