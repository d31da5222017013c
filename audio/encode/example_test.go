package encode_test

import (
	"bytes"
	"fmt"
	"log"

	"zonostream/audio/encode"
)

// An HTTP handler streams the body as the audio is generated; here the
// writer is a buffer. OpenAI's pcm format is 16-bit little-endian at
// 24 kHz.
func ExampleNew() {
	f, err := encode.Parse("PCM")
	if err != nil {
		log.Fatal(err)
	}
	var body bytes.Buffer
	e, err := encode.New(f, &body, 44100, encode.Options{Rate: 24000})
	if err != nil {
		log.Fatal(err)
	}
	for range 10 { // 0.1 s of generated audio, in pieces
		if err := e.Write(make([]float32, 441)); err != nil {
			log.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.ContentType(), e.Rate(), "Hz,", body.Len(), "bytes")
	// Output: audio/pcm 24000 Hz, 4800 bytes
}
