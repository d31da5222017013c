// Package loadtest loads a running Zonos speech server (`zonos serve`)
// with concurrent streaming requests, as `zonos loadtest` does: N streams
// at once, each with its own seed and the same text, over POST /v1/tts
// (pcm) or the WebSocket /v1/tts/stream, each played by a simulated
// real-time player (Player) to see whether the server keeps every one of
// them ahead of playback. It reports the time to first audio at the client
// and the engine's, the streams that starved, the aggregate real-time
// factor, the refusals by status, and the server's queue and device memory
// from /metrics sampled during the run; Find searches for the largest N
// with no stream starving. With Verify each stream is fetched again alone
// and its PCM compared byte for byte, so that a server sharing its GPU
// among streams can be checked to speak each exactly as it would alone.
//
// Nothing here asserts a time: the figures are measured and reported.
package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultURL is where `zonos serve` listens by default.
const DefaultURL = "http://127.0.0.1:8790"

// DefaultText is what every stream speaks unless told otherwise: two
// ordinary sentences, a few seconds of speech.
const DefaultText = "The quick brown fox jumps over the lazy dog, and the dog does not mind at all. " +
	"Every stream of this test speaks the same words with a voice of its own seed."

// DefaultPreRoll is the simulated player's buffer before it plays: about
// what a client that streams speech to a sound card holds.
const DefaultPreRoll = 200 * time.Millisecond

// Options say whom to load and with what.
type Options struct {
	// URL is the server's base URL (DefaultURL when empty).
	URL string
	// APIKey is sent as Authorization: Bearer (none when empty).
	APIKey string
	// WebSocket sends each stream over /v1/tts/stream instead of POST
	// /v1/tts.
	WebSocket bool
	// Text is what every stream speaks (DefaultText when empty).
	Text string
	// Seed is the first stream's seed; stream i has Seed+i.
	Seed uint64
	// MaxSeconds bounds the audio of one part of the text (0: the
	// server's limit).
	MaxSeconds float64
	// PreRoll is how long the simulated player buffers after a stream's
	// first audio before it plays (0: not at all; DefaultPreRoll is
	// `zonos loadtest`'s).
	PreRoll time.Duration
	// Verify fetches every complete stream again alone afterwards, one
	// after another, and compares its PCM byte for byte.
	Verify bool
	// MetricsEvery is how often /metrics is sampled during a run
	// (100 ms when 0).
	MetricsEvery time.Duration
	// Progress, when set, hears what is being done (one line each).
	Progress func(string)
}

func (o *Options) defaults() {
	if o.URL == "" {
		o.URL = DefaultURL
	}
	o.URL = strings.TrimRight(o.URL, "/")
	if o.Text == "" {
		o.Text = DefaultText
	}
	if o.MetricsEvery <= 0 {
		o.MetricsEvery = 100 * time.Millisecond
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
}

// protocol names how the streams were sent.
func (o *Options) protocol() string {
	if o.WebSocket {
		return "websocket"
	}
	return "http"
}

// Result is one run of N concurrent streams.
type Result struct {
	Streams  int    `json:"streams"`
	Protocol string `json:"protocol"` // http or websocket
	// Complete streams ended normally (no error trailer or event) with
	// valid audio.
	Complete int `json:"complete"`
	// TTFA is the client's time from sending a stream's request (for a
	// WebSocket, starting its handshake) to its first audio byte;
	// EngineTTFA the engine's own (the X-Zonos-TTFA-Ms trailer, the
	// first_audio event).
	TTFA       Stat `json:"ttfa"`
	EngineTTFA Stat `json:"engine_ttfa"`
	// Starved is how many streams ever starved; Underruns and
	// StarvedSeconds are their waits, all streams together.
	Starved        int     `json:"starved_streams"`
	Underruns      int     `json:"underruns"`
	StarvedSeconds float64 `json:"starved_seconds"`
	// RTF is the audio seconds received by all streams over the wall
	// seconds from the first request to the last stream's end.
	AudioSeconds float64 `json:"audio_seconds"`
	WallSeconds  float64 `json:"wall_seconds"`
	RTF          float64 `json:"aggregate_rtf"`
	// Errors counts the streams that did not complete, by what happened
	// (errorLabel): "503 queue_full", "429 too_many_streams", "truncated", …
	Errors map[string]int `json:"errors,omitempty"`
	// Server is what /metrics said during the run.
	Server ServerMetrics `json:"server"`
	// Verified streams were fetched again alone; Mismatches of them
	// differed (Stream.Mismatch says how).
	Verified   int `json:"verified,omitempty"`
	Mismatches int `json:"mismatches,omitempty"`
	// Invalid streams completed with audio that is not whole 16-bit
	// samples, or at 44.1 kHz not whole 512-sample frames.
	Invalid   int      `json:"invalid,omitempty"`
	PerStream []Stream `json:"per_stream"`
}

// Good says that every stream completed with valid audio, none starved,
// and none differed from itself alone (when verified).
func (r *Result) Good() bool {
	return r.Complete == r.Streams && r.Starved == 0 && len(r.Errors) == 0 && r.Mismatches == 0 && r.Invalid == 0
}

// Stream is one stream of a run.
type Stream struct {
	Index int    `json:"index"`
	Seed  uint64 `json:"seed"`
	// Error is why the stream did not complete ("" when it did): see
	// Result.Errors; Message is the server's or the connection's words.
	Error      string  `json:"error,omitempty"`
	Message    string  `json:"message,omitempty"`
	SampleRate int     `json:"sample_rate,omitempty"`
	AudioBytes int64   `json:"audio_bytes"`
	TTFAMs     float64 `json:"ttfa_ms,omitempty"`
	// EngineTTFAMs is 0 when the server did not say.
	EngineTTFAMs float64 `json:"engine_ttfa_ms,omitempty"`
	Underruns    int     `json:"underruns"`
	StarvedMs    float64 `json:"starved_ms"`
	// AudioSHA256 is the SHA-256 of the stream's PCM (hex), to compare
	// streams across runs, builds and servers.
	AudioSHA256 string `json:"audio_sha256,omitempty"`
	// Mismatch says how the stream differed from itself alone (Verify).
	Mismatch string `json:"mismatch,omitempty"`
	// audio is the stream's PCM, kept for Verify only.
	audio []byte
}

// complete: the stream ended normally.
func (s *Stream) complete() bool { return s.Error == "" }

// AudioSeconds is the audio the stream received.
func (s *Stream) AudioSeconds() float64 {
	if s.SampleRate == 0 {
		return 0
	}
	return float64(s.AudioBytes/2) / float64(s.SampleRate)
}

// Run checks that the server at o.URL answers and takes the key, then
// runs n concurrent streams. An error is returned only when the run
// cannot say anything about the server's capacity: it is unreachable,
// refuses the key, or refuses the request itself (a 400: the text or
// max_seconds); busy answers (503, 429) are counted in the result.
func Run(ctx context.Context, o Options, n int) (*Result, error) {
	o.defaults()
	if n < 1 {
		return nil, fmt.Errorf("loadtest: %d streams: want at least 1", n)
	}
	if err := Check(ctx, o); err != nil {
		return nil, err
	}
	return run(ctx, o, n)
}

// run is Run after the check.
func run(ctx context.Context, o Options, n int) (*Result, error) {
	o.Progress(fmt.Sprintf("%d concurrent streams over %s", n, o.protocol()))
	c := newClient(o, n)
	defer c.close()
	sm := startSampler(ctx, o)
	streams := make([]Stream, n)
	fatal := make([]error, n)
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			streams[i], fatal[i] = c.stream(ctx, i, true)
		}()
	}
	t0 := time.Now()
	close(begin)
	wg.Wait()
	wall := time.Since(t0)
	server := sm.stop()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loadtest: interrupted: %w", err)
	}
	if err := firstOf(fatal); err != nil {
		return nil, err
	}
	r := summarise(o, streams, wall, server)
	if o.Verify {
		if err := verify(ctx, o, c, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// firstOf is the first error of errs, nil when there is none.
func firstOf(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// summarise gathers a run's streams into its result.
func summarise(o Options, streams []Stream, wall time.Duration, server ServerMetrics) *Result {
	r := &Result{Streams: len(streams), Protocol: o.protocol(), WallSeconds: wall.Seconds(), Server: server, PerStream: streams}
	var ttfa, engine []float64
	for i := range streams {
		s := &streams[i]
		r.AudioSeconds += s.AudioSeconds()
		if s.AudioBytes > 0 {
			ttfa = append(ttfa, s.TTFAMs)
			if s.EngineTTFAMs > 0 {
				engine = append(engine, s.EngineTTFAMs)
			}
		}
		if s.Underruns > 0 {
			r.Starved++
			r.Underruns += s.Underruns
			r.StarvedSeconds += s.StarvedMs / 1000
		}
		if s.complete() {
			r.Complete++
			continue
		}
		if s.Error == errInvalidAudio {
			r.Invalid++
		}
		if r.Errors == nil {
			r.Errors = map[string]int{}
		}
		r.Errors[s.Error]++
	}
	r.TTFA, r.EngineTTFA = stat(ttfa), stat(engine)
	if wall > 0 {
		r.RTF = r.AudioSeconds / wall.Seconds()
	}
	return r
}

// client sends the streams of one run.
type client struct {
	o    Options
	http *http.Client
}

// newClient makes the run's HTTP client: connections of its own (opened
// as the run starts, so every run pays for its own), no proxy, no
// compression, and no timeout beyond the run's context (a queued request
// waits as long as the server keeps it).
func newClient(o Options, n int) *client {
	tr := &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: n, ForceAttemptHTTP2: false}
	return &client{o: o, http: &http.Client{Transport: tr}}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// stream runs stream i; keep holds its audio for Verify. The error is
// fatal to the run (the key or the request refused), not the stream's
// own failure, which the Stream records.
func (c *client) stream(ctx context.Context, i int, keep bool) (Stream, error) {
	s := Stream{Index: i, Seed: c.o.Seed + uint64(i)}
	var err error
	if c.o.WebSocket {
		err = c.streamWS(ctx, &s, keep && c.o.Verify)
	} else {
		err = c.streamHTTP(ctx, &s, keep && c.o.Verify)
	}
	if err == nil && s.complete() && !validPCM(s.AudioBytes, s.SampleRate) {
		s.Error, s.Message = errInvalidAudio, invalidMessage(s.AudioBytes, s.SampleRate)
	}
	return s, err
}

// request is the body of POST /v1/tts and the WebSocket's start message.
type request struct {
	Type       string  `json:"type,omitempty"`
	Text       string  `json:"text"`
	Seed       uint64  `json:"seed"`
	Format     string  `json:"format"`
	MaxSeconds float64 `json:"max_seconds,omitempty"`
	// End, on the WebSocket's start: the text is all of it, so it is cut
	// into parts as /v1/tts cuts it (an end message after the start would
	// race the engine's first cut).
	End bool `json:"end,omitempty"`
}

func (c *client) request(s *Stream) request {
	return request{Text: c.o.Text, Seed: s.Seed, Format: "pcm", MaxSeconds: c.o.MaxSeconds}
}

// authorize adds the API key to h.
func (c *client) authorize(h http.Header) {
	if c.o.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.o.APIKey)
	}
}
