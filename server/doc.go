// Package server is Zonos Stream's local speech service: the engine behind
// HTTP and WebSocket APIs that other programs already speak.
//
//   - POST /v1/audio/speech — OpenAI-compatible (openai clients work with
//     base_url http://127.0.0.1:8790/v1); the body streams as audio is
//     committed.
//   - POST /v1/tts — every Zonos control, same streaming body.
//   - GET /v1/tts/stream — WebSocket for voice agents: text in as it is
//     produced, audio out as binary frames, JSON events between them.
//   - GET/POST /v1/voices, DELETE /v1/voices/{name} — the voice library
//     the CLI and the app share.
//   - GET /healthz, /readyz, /metrics — operations (Prometheus format).
//   - GET / — a small page to try it from a browser.
//
// One engine speaks one utterance at a time, so requests take the engine
// in turn: a bounded queue holds the ones waiting, and a request that
// finds it full gets 503 with Retry-After.
//
// Security (security.go): API keys are required whenever the server
// listens beyond loopback; on loopback the Host and Origin headers are
// checked so that a web page elsewhere cannot make the local server speak
// or read its voices (cross-site requests and DNS rebinding).
package server
