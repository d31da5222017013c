package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ErrUnreachable: nothing answered at the server's address.
var ErrUnreachable = errors.New("cannot reach the speech server")

// ErrUnauthorized: the server asked for an API key, or refused the one
// given.
var ErrUnauthorized = errors.New("the speech server answered 401 Unauthorized")

// ErrRefused: the server refused the request itself (its text, its
// max_seconds, the Host), so every stream would be refused alike.
var ErrRefused = errors.New("the speech server refused the request")

// checkTimeout bounds each of Check's requests.
const checkTimeout = 10 * time.Second

// Check asks the server at o.URL whether it is up, ready and takes the
// API key, so that a mistake is one clear error before any stream starts.
func Check(ctx context.Context, o Options) error {
	o.defaults()
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("loadtest: the server's URL %q: want http://host:port, e.g. %s", o.URL, DefaultURL)
	}
	hc := &http.Client{Timeout: checkTimeout, Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	get := func(path string, auth bool) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL+path, nil)
		if err != nil {
			return nil, nil, err
		}
		if auth && o.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+o.APIKey)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("%w at %s (is `zonos serve` running there?): %w", ErrUnreachable, o.URL, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, nil, fmt.Errorf("%w at %s: reading GET %s: %w", ErrUnreachable, o.URL, path, err)
		}
		return resp, body, nil
	}

	resp, body, err := get("/readyz", false)
	if err != nil {
		return err
	}
	var ready struct {
		Ready  *bool  `json:"ready"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &ready) != nil || ready.Ready == nil {
		if msg := apiMessage(body); msg != "" {
			return fmt.Errorf("%w: GET %s/readyz answered %d: %s", ErrRefused, o.URL, resp.StatusCode, msg)
		}
		return fmt.Errorf("%w at %s: GET /readyz answered %d without a Zonos readiness report: is it a Zonos speech server?", ErrUnreachable, o.URL, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the speech server at %s is not ready: %s", o.URL, ready.Reason)
	}

	// /v1/models needs the key, as the speech endpoints do.
	resp, body, err = get("/v1/models", true)
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%w: %s", ErrUnauthorized, apiMessage(body))
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%w: GET /v1/models answered %d: %s", ErrRefused, resp.StatusCode, apiMessage(body))
	}
	return nil
}

// apiMessage is the message of the server's error body, or the body
// itself, shortened, when it is not one.
func apiMessage(body []byte) string {
	_, msg := apiError(body)
	return msg
}

// apiError reads the server's error body ({"error": {"code", "message"}}).
func apiError(body []byte) (code, message string) {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Code, e.Error.Message
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return "", string(body)
}

// Labels of the ways a stream ends early besides a refusal's status.
const (
	// errTruncated: the stream ended after some audio with an error (the
	// X-Zonos-Error trailer, a WebSocket error event, a close without
	// done).
	errTruncated = "truncated"
	// errConnection: the connection failed (refused, reset).
	errConnection = "connection"
	// errInvalidAudio: the stream completed with audio that is not whole
	// samples and frames (validPCM).
	errInvalidAudio = "invalid_audio"
)

// refusal labels a refused stream: its status and the server's code,
// e.g. "503 queue_full". It returns a fatal error when the refusal would
// be every stream's (a mistake in the request or the key), not the
// server being busy.
func refusal(status int, code, message string) (string, error) {
	switch status {
	case http.StatusUnauthorized:
		return "", fmt.Errorf("%w: %s", ErrUnauthorized, message)
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return "", fmt.Errorf("%w (%d): %s", ErrRefused, status, message)
	}
	label := strconv.Itoa(status)
	if code != "" {
		label += " " + code
	}
	return label, nil
}

// validPCM: n bytes of 16-bit samples at rate are whole samples and, at
// the engine's 44.1 kHz, whole 512-sample frames (what the engine
// commits).
func validPCM(n int64, rate int) bool {
	return n%2 == 0 && (rate != engineRate || (n/2)%frameSamples == 0)
}

func invalidMessage(n int64, rate int) string {
	if n%2 != 0 {
		return fmt.Sprintf("%d bytes: not whole 16-bit samples", n)
	}
	return fmt.Sprintf("%d samples at %d Hz: not whole %d-sample frames", n/2, rate, frameSamples)
}

// The engine's sample rate and frame (engine.SampleRate, the DAC's hop).
const (
	engineRate   = 44100
	frameSamples = 512
)
