package speaker_test

import (
	"context"
	"path/filepath"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/speaker"
	"zonostream/internal/check"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

// TestConformanceSpeakerTiny runs the speaker-* checks on the CPU.
func TestConformanceSpeakerTiny(t *testing.T) {
	dir := filepath.Dir(golden.Pack(t, "speaker-tiny"))
	golden.Report(t, conformance.Speaker(dir, cpu.New(2)))
}

func TestEmbedCached(t *testing.T) {
	p := golden.Pack(t, "speaker-tiny")
	m, err := speaker.Load(filepath.Join(p, speaker.WeightsFile), filepath.Join(p, speaker.LDAFile), cpu.New(2))
	if err != nil {
		t.Fatal(err)
	}
	wav := speaker.GoldenFloats(t, "wav16k")
	c := &speaker.Cache{Dir: t.TempDir(), OnStoreError: func(err error) { t.Error(err) }}
	v1, hit, err := m.EmbedCached(context.Background(), c, wav)
	if err != nil || hit {
		t.Fatalf("first call: hit=%v err=%v", hit, err)
	}
	v2, hit, err := m.EmbedCached(context.Background(), c, wav)
	if err != nil || !hit {
		t.Fatalf("second call: hit=%v err=%v", hit, err)
	}
	for i := range v1 {
		if v1[i] != v2[i] {
			t.Fatalf("cached value %d differs", i)
		}
	}
	// end to end from the golden 16 kHz audio (own features) against the golden LDA
	if cos := check.Cosine(v1, speaker.GoldenFloats(t, "lda")); cos < conformance.SpeakerMinCosine {
		t.Errorf("lda from wav16k: cosine %.9f < %v", cos, conformance.SpeakerMinCosine)
	}
	wav[100] += 1e-3
	if _, hit, _ := m.EmbedCached(context.Background(), c, wav); hit {
		t.Error("a different clip hit the cache")
	}
}
