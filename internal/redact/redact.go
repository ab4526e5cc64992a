// Package redact is the relay's one redaction policy for headers, URLs,
// bodies and error text. Body capture, logs, replay bundles and replay
// comparisons all go through it, so what counts as a secret is decided in
// exactly one place.
//
// A redacted value is replaced by Marker. Redaction is idempotent: applying
// it to already redacted data changes nothing, and the Check functions
// accept exactly what the redacting functions produce.
package redact

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strings"
)

// Marker replaces every redacted value.
const Marker = "[REDACTED]"

// sensitiveHeaders are the canonical names of the headers whose values are
// always redacted.
var sensitiveHeaders = map[string]bool{
	"Authorization":       true,
	"Proxy-Authorization": true,
	"Cookie":              true,
	"Set-Cookie":          true,
	"X-Api-Key":           true,
	"Api-Key":             true,
	"Openai-Organization": true,
	"Openai-Project":      true,
}

// SensitiveHeader reports whether the values of the header name are
// redacted.
func SensitiveHeader(name string) bool {
	return sensitiveHeaders[textproto.CanonicalMIMEHeaderKey(name)]
}

// sensitiveWords are the fragments that make a query parameter name look
// like it carries a credential.
var sensitiveWords = []string{"token", "secret", "key", "password", "passwd", "credential", "auth"}

// SensitiveQueryName reports whether a query parameter name looks like it
// carries a credential: it contains token, secret, key, password, passwd,
// credential or auth (which covers authorization), in any case.
func SensitiveQueryName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sensitiveWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Headers returns a copy of h with every value of a sensitive header
// replaced by Marker, and in every other value the given secrets and
// credential-shaped tokens (see Text) replaced by Marker: a credential
// sent in a header of any name is not written. Names are canonicalized; a
// nil h gives an empty map.
func Headers(h http.Header, secrets ...string) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if sensitiveHeaders[ck] {
			red := make([]string, len(vs))
			for i := range red {
				red[i] = Marker
			}
			out[ck] = append(out[ck], red...)
			continue
		}
		for _, v := range vs {
			out[ck] = append(out[ck], Text(v, secrets...))
		}
	}
	return out
}

// CheckHeaders reports an error naming the first (in sorted order) header
// that is sensitive but does not hold only Marker values, or that holds a
// credential-shaped token.
func CheckHeaders(h http.Header) error {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !SensitiveHeader(k) {
			for _, v := range h[k] {
				if CheckBody([]byte(v)) != nil {
					return fmt.Errorf("header %s holds a credential", textproto.CanonicalMIMEHeaderKey(k))
				}
			}
			continue
		}
		for _, v := range h[k] {
			if v != Marker {
				return fmt.Errorf("header %s is not redacted", textproto.CanonicalMIMEHeaderKey(k))
			}
		}
	}
	return nil
}

// URL returns raw with its user information, fragment, the values of
// sensitive query parameters and every query name or value that holds one
// of the given secrets or a credential-shaped token replaced by Marker,
// and those secrets and tokens replaced in the path. A string that does
// not parse as a URL, or that still holds a secret or token elsewhere (in
// the host, say), is replaced by Marker entirely: it cannot be proven
// harmless.
func URL(raw string, secrets ...string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Marker
	}
	if u.User != nil {
		u.User = url.User(Marker)
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Marker, ""
	}
	if u.RawQuery != "" {
		u.RawQuery = redactQuery(u.RawQuery, secrets)
	}
	if p := Text(u.Path, secrets...); p != u.Path {
		u.Path, u.RawPath = p, ""
	}
	out := u.String()
	if Text(out, secrets...) != out {
		return Marker
	}
	return out
}

// redactQuery rewrites a raw query keeping the order and spelling of every
// parameter and replacing sensitive values and names and values that hold
// a secret.
func redactQuery(raw string, secrets []string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, value, hasValue := strings.Cut(p, "=")
		dn, err := url.QueryUnescape(name)
		if err != nil {
			// an undecodable name cannot be classified: hide its value
			dn = "key"
		}
		if Text(dn, secrets...) != dn {
			name, dn = url.QueryEscape(Marker), Marker
			parts[i] = name
			if hasValue {
				parts[i] += "=" + value
			}
		}
		if SensitiveQueryName(dn) && (hasValue || name != "") && p != "" {
			parts[i] = name + "=" + url.QueryEscape(Marker)
			continue
		}
		dv, err := url.QueryUnescape(value)
		if err != nil {
			dv = value
		}
		if hasValue && Text(dv, secrets...) != dv {
			parts[i] = name + "=" + url.QueryEscape(Marker)
		}
	}
	return strings.Join(parts, "&")
}

// CheckURL reports an error when raw is not in redacted form: it carries
// user information, a fragment, or a sensitive query parameter whose value
// is not Marker.
func CheckURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("URL does not parse")
	}
	if u.User != nil && u.User.String() != url.User(Marker).String() {
		return errors.New("URL carries user information")
	}
	if u.Fragment != "" && u.Fragment != Marker {
		return errors.New("URL carries a fragment")
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		if p == "" {
			continue
		}
		name, value, _ := strings.Cut(p, "=")
		dn, err := url.QueryUnescape(name)
		if err != nil {
			dn = "key" // as redactQuery: an undecodable name counts as sensitive
		}
		if !SensitiveQueryName(dn) {
			if dv, err := url.QueryUnescape(value); err == nil && CheckBody([]byte(dv)) != nil {
				return fmt.Errorf("URL query parameter %q holds a credential", sanitizeName(dn))
			}
			continue
		}
		if dv, err := url.QueryUnescape(value); err != nil || dv != Marker {
			return fmt.Errorf("URL query parameter %q is not redacted", sanitizeName(dn))
		}
	}
	return nil
}

// sanitizeName keeps a parameter name short and printable for an error.
func sanitizeName(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// Error returns err's text with the URLs of any *url.Error in it redacted
// and the given secrets replaced by Marker. Use it for every error that may
// reach a log line, a file or a terminal.
func Error(err error, secrets ...string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		msg = strings.ReplaceAll(msg, ue.URL, URL(ue.URL))
	}
	return Text(msg, secrets...)
}

// Text replaces every occurrence of the given secrets (those shorter than
// MinSecretLen are ignored) and every credential-shaped token (see Body) in s by Marker.
func Text(s string, secrets ...string) string {
	b, _ := Body([]byte(s), secrets...)
	return string(b)
}
