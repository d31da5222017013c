package speaker

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"zonostream/engine/cpu"
	"zonostream/internal/golden"
)

func TestCacheRoundTripAndDamage(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	key := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if _, ok := c.Get(key); ok {
		t.Fatal("hit in an empty cache")
	}
	v := []float32{1, -2, 3.5, float32(math.Pi)}
	if err := c.Put(key, v); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Get(key)
	if !ok || len(got) != 4 || got[3] != v[3] {
		t.Fatalf("got %v %v", got, ok)
	}
	p, _ := c.path(key)
	data, _ := os.ReadFile(p)
	data[len(data)-6] ^= 1
	os.WriteFile(p, data, 0o644)
	if _, ok := c.Get(key); ok {
		t.Error("damaged entry read as a hit")
	}
	if err := c.Put("../../etc/passwd", v); err == nil {
		t.Error("path-like key accepted")
	}
	if m, _ := filepath.Glob(filepath.Join(c.Dir, "*", ".tmp-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func TestEmbedCached(t *testing.T) {
	p := golden.Pack(t, "speaker-tiny")
	m, err := Load(filepath.Join(p, WeightsFile), filepath.Join(p, LDAFile), cpu.New(2))
	if err != nil {
		t.Fatal(err)
	}
	wav := goldenFloats(t, "wav16k")
	c := &Cache{Dir: t.TempDir(), OnStoreError: func(err error) { t.Error(err) }}
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
	if cos := Cosine(v1, goldenFloats(t, "lda")); cos < MinCosine {
		t.Errorf("lda from wav16k: cosine %.9f < %v", cos, MinCosine)
	}
	wav[100] += 1e-3
	if _, hit, _ := m.EmbedCached(context.Background(), c, wav); hit {
		t.Error("a different clip hit the cache")
	}
}
