package server

import (
	_ "embed"
	"net/http"
)

// pageHTML is the page served at /: type, pick a voice, hear it as it
// streams (over the WebSocket), see the time to first audio.
//
//go:embed web/index.html
var pageHTML []byte

func (s *Server) page(w http.ResponseWriter, r *http.Request, _ string) *apiError {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// The page's script is inline and talks only to this server.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; media-src 'self' blob:; frame-ancestors 'none'")
	_, _ = w.Write(pageHTML)
	return nil
}
