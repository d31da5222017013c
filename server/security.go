package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"slices"
	"strings"
)

// guard applies the security rules to every request before its handler:
// the Host check on loopback (DNS rebinding), the Origin check and CORS
// (other web pages), and the API key. It returns the caller's identity
// for limits and logs ("" when no keys are configured or needKey is off:
// probes, metrics and the page), or answers the request itself and
// returns ok false.
func (s *Server) guard(w http.ResponseWriter, r *http.Request, needKey bool) (who string, ok bool) {
	if s.loopback && !loopbackHostHeader(r.Host) {
		// A page on evil.example whose name was rebound to 127.0.0.1 is
		// same-origin to the browser but names its own host here. 403,
		// not 421 Misdirected Request, which browsers retry.
		writeError(w, &apiError{Status: http.StatusForbidden, Type: "forbidden", Code: "host_not_allowed",
			Message: "this server answers only requests addressed to localhost, 127.0.0.1 or [::1] (Host " + quoteHost(r.Host) + ")"})
		return "", false
	}
	origin := r.Header.Get("Origin")
	if origin != "" && origin != "null" && !s.sameOrigin(origin, r) {
		if !slices.Contains(s.cfg.AllowOrigins, strings.ToLower(origin)) {
			writeError(w, &apiError{Status: http.StatusForbidden, Type: "forbidden",
				Message: "web pages from " + origin + " may not use this server; start it with --allow-origin " + origin + " to let them"})
			return "", false
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-Zonos-Sample-Rate, X-Zonos-TTFA-Ms, X-Zonos-Error, Retry-After")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			// The allowed origin's client may send headers of its own
			// (OpenAI's sends x-stainless-*): it may send what it asks for.
			allow := "Authorization, Content-Type"
			if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
				allow = asked
			}
			h.Set("Access-Control-Allow-Headers", allow)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return "", false
		}
	} else if origin == "null" || (origin == "" && crossSiteFetch(r)) {
		// No usable Origin but the browser says another site asked (an
		// <img>, a form from a sandboxed frame): refuse the API to it.
		writeError(w, &apiError{Status: http.StatusForbidden, Type: "forbidden", Message: "cross-site requests may not use this server"})
		return "", false
	}
	if len(s.keys) == 0 || !needKey {
		return "", true
	}
	key, found := bearer(r)
	if !found {
		writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "missing_api_key",
			Message: "this server needs an API key: send it as Authorization: Bearer KEY"})
		return "", false
	}
	if who, ok = s.keyID(key); !ok {
		writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
			Message: "the API key is not one this server accepts"})
		return "", false
	}
	return who, true
}

// keyID finds key among the accepted ones in time that does not depend on
// where the keys differ, and names it by a short hash for logs and limits.
// Every key is compared, so the time does not say which one matched.
func (s *Server) keyID(key string) (string, bool) {
	h := sha256.Sum256([]byte(key))
	match := -1
	for i, k := range s.keys {
		if subtle.ConstantTimeCompare(h[:], k[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	return "key:" + hex.EncodeToString(s.keys[match][:4]), true
}

func hashKeys(keys []string) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, len(keys))
	for i, k := range keys {
		out[i] = sha256.Sum256([]byte(k))
	}
	return out
}

// bearer is the API key of a request: the Authorization header, or for a
// browser's WebSocket (which cannot set headers) a subprotocol
// "bearer.KEY" offered beside "zonos.v1".
func bearer(r *http.Request) (string, bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, key, ok := strings.Cut(a, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key), true
		}
		return "", false
	}
	for _, line := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(line, ",") {
			if k, ok := strings.CutPrefix(strings.TrimSpace(p), "bearer."); ok {
				return k, true
			}
		}
	}
	return "", false
}

// sameOrigin: the page asking was served by this server (the origin names
// the host the request was addressed to).
func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	o := strings.ToLower(origin)
	host := strings.ToLower(r.Host)
	return o == "http://"+host || o == "https://"+host
}

// crossSiteFetch: the browser's Fetch Metadata says another site made the
// request, and it is not the user opening a page.
func crossSiteFetch(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	return (site == "cross-site" || site == "same-site") && r.Header.Get("Sec-Fetch-Mode") != "navigate"
}

// loopbackHostHeader: the Host header names this computer's loopback.
func loopbackHostHeader(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return host != "" && isLoopbackHost(host)
}

func quoteHost(h string) string {
	if len(h) > 80 {
		h = h[:80] + "…"
	}
	return `"` + strings.ToValidUTF8(h, "?") + `"`
}
