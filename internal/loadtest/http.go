package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// readSize is the most one read of a stream takes: small enough that the
// arrival times the player sees follow the server's writes (each a few
// frames of audio).
const readSize = 16 << 10

// streamHTTP runs s as POST /v1/tts with format pcm, reading the body as
// it arrives into a Player; keep holds the audio in s.
func (c *client) streamHTTP(ctx context.Context, s *Stream, keep bool) error {
	body, err := json.Marshal(c.request(s))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.URL+"/v1/tts", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c.authorize(req.Header)
	sent := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		s.Error, s.Message = errConnection, err.Error()
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		code, msg := apiError(data)
		s.Message = msg
		s.Error, err = refusal(resp.StatusCode, code, msg)
		return err
	}
	s.SampleRate = engineRate // pcm's rate on /v1/tts unless the request names one
	if r, err := strconv.Atoi(resp.Header.Get("X-Zonos-Sample-Rate")); err == nil && r > 0 {
		s.SampleRate = r
	}
	rc := newReceiver(s, sent, c.o.PreRoll, keep)
	defer rc.end()
	buf := make([]byte, readSize)
	for {
		n, err := resp.Body.Read(buf)
		rc.audio(time.Now(), buf[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.Error, s.Message = errTruncated, "reading the body: "+err.Error()
			break
		}
	}
	if v, err := strconv.ParseFloat(resp.Trailer.Get("X-Zonos-TTFA-Ms"), 64); err == nil {
		s.EngineTTFAMs = v
	}
	if e := resp.Trailer.Get("X-Zonos-Error"); e != "" && s.Error == "" {
		s.Error, s.Message = errTruncated, e
	}
	return nil
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }
