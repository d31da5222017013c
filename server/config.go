package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"zonostream/audio"
)

// DefaultListen is where the server listens unless told otherwise: the
// loopback interface only, on a port no other common local AI service
// uses (ollama 11434, Gradio 7860, Kokoro-FastAPI 8880).
const DefaultListen = "127.0.0.1:8790"

// Config says how a Server listens and whom it serves.
type Config struct {
	// Listen is the address the server is reachable at (host:port). It
	// decides the security rules: beyond loopback, API keys are required.
	Listen string
	// APIKeys are the accepted bearer tokens; none means no key is asked
	// for (only allowed on loopback).
	APIKeys []string
	// AllowOrigins are the web origins (scheme://host[:port]) whose pages
	// may call the API from a browser (CORS); none means only pages the
	// server itself serves.
	AllowOrigins []string
	// Limits bound what one request or client may ask for.
	Limits Limits
	// Log receives one structured line per request; nil discards them.
	Log *slog.Logger
	// LogText adds request text to the logs (off: text is never logged).
	LogText bool
	// ShutdownGrace is how long streams may run on after a shutdown
	// begins before they are ended (default 30 s).
	ShutdownGrace time.Duration
}

// engineMaxSeconds is the longest part the engine generates
// (engine.Request.MaxSeconds).
const engineMaxSeconds = 60

// Limits bound requests. The zero value of a field means its default.
type Limits struct {
	MaxBodyBytes   int64   // a JSON request body (default 2 MiB)
	MaxTextBytes   int     // the text of one request (default 1 MiB; the engine's limit is 4 MiB)
	MaxClipBytes   int64   // an uploaded voice clip or audio prefix (default 10 MiB)
	MaxClipSeconds float64 // a voice clip or prefix is cut to this (default 30 s)
	// MaxStreamsPerKey bounds the streams one API key (or, without keys,
	// everyone) has running or queued at once (default 4).
	MaxStreamsPerKey int
	// MaxQueue bounds requests waiting for the engine (default 16).
	MaxQueue int
	// MaxBufferedSeconds bounds the audio held for a client that reads
	// slower than it is generated (default 60 s); SlowClientTimeout is how
	// long generation waits for such a client to make room before its
	// stream is ended (default 10 s).
	MaxBufferedSeconds float64
	SlowClientTimeout  time.Duration
	// MaxSeconds bounds the audio of one part of a text; a request that
	// gives no max_seconds (OpenAI's never do) gets this (default 30 s,
	// the engine's own default).
	MaxSeconds float64
	// TextIdleTimeout ends a WebSocket stream whose client sends no
	// message for this long before it has sent end (default 60 s), so a
	// forgotten connection does not hold the engine.
	TextIdleTimeout time.Duration
}

func (l *Limits) defaults() {
	setI64 := func(p *int64, d int64) {
		if *p <= 0 {
			*p = d
		}
	}
	setInt := func(p *int, d int) {
		if *p <= 0 {
			*p = d
		}
	}
	setF := func(p *float64, d float64) {
		if *p <= 0 {
			*p = d
		}
	}
	setI64(&l.MaxBodyBytes, 2<<20)
	setInt(&l.MaxTextBytes, 1<<20)
	setI64(&l.MaxClipBytes, 10<<20)
	setF(&l.MaxClipSeconds, audio.DefaultClipSeconds)
	setInt(&l.MaxStreamsPerKey, 4)
	setInt(&l.MaxQueue, 16)
	setF(&l.MaxBufferedSeconds, 60)
	setF(&l.MaxSeconds, 30)
	if l.SlowClientTimeout <= 0 {
		l.SlowClientTimeout = 10 * time.Second
	}
	if l.TextIdleTimeout <= 0 {
		l.TextIdleTimeout = 60 * time.Second
	}
}

// Check reports what New would refuse in c, without an engine: a command
// that loads a model only to serve it checks first, so a mistake is
// reported before a load of seconds to minutes.
func (c Config) Check() error {
	c.APIKeys = append([]string(nil), c.APIKeys...)
	c.AllowOrigins = append([]string(nil), c.AllowOrigins...)
	return c.check()
}

// check normalises c and refuses what would be unsafe.
func (c *Config) check() error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("listen address %q: %w (want host:port, e.g. %s)", c.Listen, err, DefaultListen)
	}
	keys := c.APIKeys[:0:0]
	for _, k := range c.APIKeys {
		if k = strings.TrimSpace(k); k != "" {
			if len(k) < 16 {
				return fmt.Errorf("an API key of %d characters is too easy to guess; use at least 16 (e.g. openssl rand -hex 24)", len(k))
			}
			keys = append(keys, k)
		}
	}
	c.APIKeys = keys
	if !isLoopbackHost(host) && len(c.APIKeys) == 0 {
		return fmt.Errorf("listening on %s reaches beyond this computer: give an API key (--api-key-file)", c.Listen)
	}
	for i, o := range c.AllowOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("allowed origin %q: want scheme://host[:port], e.g. http://localhost:3000", o)
		}
		c.AllowOrigins[i] = strings.ToLower(u.Scheme + "://" + u.Host)
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 30 * time.Second
	}
	c.Limits.defaults()
	if c.Limits.MaxSeconds > engineMaxSeconds {
		return fmt.Errorf("the longest part of %g s is over the engine's %g s", c.Limits.MaxSeconds, float64(engineMaxSeconds))
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// isLoopbackHost: the host part of an address reaches only this computer.
// An empty host (":8790") listens on every interface.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
