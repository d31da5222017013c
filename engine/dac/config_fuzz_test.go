package dac

import (
	"os"
	"path/filepath"
	"testing"

	"zonostream/internal/golden"
)

// FuzzParseConfig: arbitrary bytes never panic, and an accepted config has
// sizes in bounds and a hop that the upsampling strides reproduce (the
// streamer's frame ↔ sample alignment).
func FuzzParseConfig(f *testing.F) {
	if d := golden.Dir(); d != "" {
		if b, err := os.ReadFile(filepath.Join(d, "dac-tiny", "config.json")); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"model_type":"dac","sampling_rate":44100,"downsampling_ratios":[2,4,8,8],"hop_length":512}`))
	f.Add([]byte(`{"downsampling_ratios":[],"upsampling_ratios":[2]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted what Validate refuses: %v", err)
		}
		if c.HopLength != product(c.UpsamplingRatios) || c.HopLength <= 0 {
			t.Fatalf("hop %d, upsampling %v", c.HopLength, c.UpsamplingRatios)
		}
		if c.DecoderHiddenSize>>len(c.UpsamplingRatios) < 1 || c.FrameRate() <= 0 {
			t.Fatalf("decoder width %d over %d stages, frame rate %g", c.DecoderHiddenSize, len(c.UpsamplingRatios), c.FrameRate())
		}
	})
}
