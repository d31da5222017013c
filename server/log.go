package server

import (
	"log/slog"
	"net/http"
	"time"
)

// logWriter records what a handler answered, for the request log and the
// requests metric; it passes Flush and the ResponseController's calls on.
type logWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
	// outcome overrides "ok" for a stream that ended otherwise after its
	// 200 was sent; reason says why, for the log.
	outcome, reason string
	ttfa            time.Duration
	audioSeconds    float64
	voice           string
	text            string
}

func (l *logWriter) WriteHeader(code int) {
	if l.wrote {
		return
	}
	l.status, l.wrote = code, true
	l.ResponseWriter.WriteHeader(code)
}

func (l *logWriter) Write(b []byte) (int, error) {
	if !l.wrote {
		l.status, l.wrote = http.StatusOK, true
	}
	n, err := l.ResponseWriter.Write(b)
	l.bytes += int64(n)
	return n, err
}

func (l *logWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }

func (l *logWriter) Flush() {
	if f, ok := l.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError is what http.ResponseController.Flush calls: it passes the
// connection's error on (a client gone, a write deadline passed), which
// Flush would swallow.
func (l *logWriter) FlushError() error {
	return http.NewResponseController(l.ResponseWriter).Flush()
}

// logRequest writes one line per request. It never logs a key (only its
// short hash, who), a query string or, unless LogText is set, the text.
func (s *Server) logRequest(r *http.Request, lw *logWriter, endpoint, who, outcome string, d time.Duration) {
	attrs := []slog.Attr{
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("endpoint", endpoint),
		slog.Int("status", lw.status), slog.String("outcome", outcome), slog.Int64("bytes", lw.bytes),
		slog.Duration("duration", d), slog.String("remote", r.RemoteAddr),
	}
	if who != "" {
		attrs = append(attrs, slog.String("key", who))
	}
	if lw.voice != "" {
		attrs = append(attrs, slog.String("voice", lw.voice))
	}
	if lw.ttfa > 0 {
		attrs = append(attrs, slog.Duration("ttfa", lw.ttfa), slog.Float64("audio_seconds", lw.audioSeconds))
	}
	if lw.reason != "" {
		attrs = append(attrs, slog.String("reason", lw.reason))
	}
	if s.cfg.LogText && lw.text != "" {
		attrs = append(attrs, slog.String("text", lw.text))
	}
	level := slog.LevelInfo
	if outcome == "failed" || outcome == "slow_client" {
		level = slog.LevelWarn
	}
	s.cfg.Log.LogAttrs(r.Context(), level, "request", attrs...)
}

func statusOutcome(status int) string {
	if status < 400 {
		return "ok"
	}
	return (&apiError{Status: status}).outcome()
}
