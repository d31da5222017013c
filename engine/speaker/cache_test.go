package speaker

import (
	"math"
	"os"
	"path/filepath"
	"testing"
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
