package server

import (
	"encoding/base64"
	"encoding/json"
	"io"
)

// sseBody frames the encoder's bytes as OpenAI's speech stream
// (stream_format "sse"): each piece of audio a `speech.audio.delta` event
// with the bytes in base64, then one `speech.audio.done`. The encoder
// writes into it; event sends what has accumulated as one event, after
// each encoder call, so an event carries whole pieces of the file.
type sseBody struct {
	w       io.Writer
	pending []byte
}

func (b *sseBody) Write(p []byte) (int, error) {
	b.pending = append(b.pending, p...)
	return len(p), nil
}

// event sends the audio accumulated since the last event, if any.
func (b *sseBody) event() error {
	if len(b.pending) == 0 {
		return nil
	}
	err := b.send(map[string]any{"type": "speech.audio.delta", "audio": base64.StdEncoding.EncodeToString(b.pending)})
	b.pending = b.pending[:0]
	return err
}

// done ends the stream: OpenAI's done event (its usage counts tokens,
// which this model does not have: zeros), or an error event naming why
// the audio stopped early.
func (b *sseBody) done(reason error) error {
	if err := b.event(); err != nil {
		return err
	}
	if reason != nil {
		return b.send(map[string]any{"type": "error", "error": map[string]string{"message": reason.Error(), "type": "server_error"}})
	}
	return b.send(map[string]any{"type": "speech.audio.done", "usage": map[string]int{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}})
}

func (b *sseBody) send(v any) error {
	data, _ := json.Marshal(v)
	_, err := b.w.Write(append(append([]byte("data: "), data...), '\n', '\n'))
	return err
}
