package encode

import (
	"bytes"
	"testing"

	"zonostream/audio"
)

// TestFLACShortLastFrame checks streams whose last frame is shorter than
// any predictor's warm-up (1 to 5 samples), or that are that short in all:
// libFLAC decodes each exactly.
func TestFLACShortLastFrame(t *testing.T) {
	x := testSignal()[sigSilence:]
	for _, n := range []int{1, 2, 3, 5, flacBlock + 1, flacBlock + 2, flacBlock + 3, flacBlock + 4, flacBlock + 5, 2*flacBlock + 17} {
		var buf bytes.Buffer
		e, err := New(FLAC, &buf, inRate, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Write(x[:n]); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		d := decode(t, FLAC, buf.Bytes(), inRate)
		if len(d.pcm) != n {
			t.Fatalf("%d samples decode to %d", n, len(d.pcm))
		}
		for i := range n {
			if d.pcm[i] != audio.PCM16(x[i]) {
				t.Fatalf("%d samples: sample %d decodes as %d, want %d", n, i, d.pcm[i], audio.PCM16(x[i]))
			}
		}
	}
}
