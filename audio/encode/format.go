package encode

import (
	"fmt"
	"strings"
)

// Format is a response format of the speech server, named as in OpenAI's
// response_format.
type Format string

// The supported formats.
const (
	WAV  Format = "wav"
	PCM  Format = "pcm"
	FLAC Format = "flac"
	Opus Format = "opus"
	MP3  Format = "mp3"
)

// Formats lists the supported formats in the order they are documented.
var Formats = []Format{WAV, PCM, FLAC, Opus, MP3}

// Parse reads a format name, ignoring case.
func Parse(s string) (Format, error) {
	for _, f := range Formats {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("response format %q is not supported; use one of %s", s, strings.Join(names, ", "))
}

// ContentType is the MIME type of the format's stream; Opus is sent in an
// Ogg container (RFC 7845), hence audio/ogg.
func (f Format) ContentType() string {
	switch f {
	case WAV:
		return "audio/wav"
	case PCM:
		return "audio/pcm"
	case FLAC:
		return "audio/flac"
	case Opus:
		return "audio/ogg"
	case MP3:
		return "audio/mpeg"
	}
	return "application/octet-stream"
}
