package audio_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"zonostream/audio"
)

// A speaker clip recorded at 24 kHz, resampled to the speaker model's
// 16 kHz as Zonos does with torchaudio.
func ExampleResample() {
	clip := make([]float32, 24000) // one second at 24 kHz
	for i := range clip {
		clip[i] = float32(math.Sin(2 * math.Pi * 220 * float64(i) / 24000))
	}
	at16k, err := audio.Resample(clip, 24000, 16000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(at16k))
	// Output: 16000
}

// Committed PCM goes to a WAV file as it arrives; the file is valid after
// every Write, and Close moves it into place.
func ExampleCreateWAV() {
	dir, _ := os.MkdirTemp("", "wav")
	defer os.RemoveAll(dir)
	w, err := audio.CreateWAV(filepath.Join(dir, "speech.wav"), audio.SampleRate, audio.WAVFloat32)
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		chunk := make([]float32, 512) // one DAC frame
		if err := w.Write(chunk); err != nil {
			log.Fatal(err) // the file still holds every complete sample
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Samples())
	// Output: 1536
}

// The producer side of playback: begin, write as the engine commits,
// end, wait. Null plays into miniaudio's null backend (no sound card).
func ExamplePlayer() {
	p, err := audio.NewPlayer(audio.PlayerConfig{Null: true})
	if err != nil {
		log.Fatal(err) // no device: keep writing the WAV file instead
	}
	defer p.Close()
	ctx := context.Background()
	u := p.BeginUtterance()
	for range 4 {
		if err := p.WriteAll(ctx, make([]float32, 512)); err != nil {
			log.Fatal(err)
		}
	}
	p.EndUtterance()
	if err := u.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	_, heard := u.FirstSound()
	fmt.Println(u.Played(), heard, u.Underruns())
	// Output: 2048 true 0
}
