package voices

import (
	"math"
	"testing"
)

// FuzzDecode: any bytes in a voice file decode to a voice that passes
// every check, or to an error; never a panic.
func FuzzDecode(f *testing.F) {
	good, err := encode(testVoice("seed"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format":"zonos-stream voice","version":1,"name":"a","embedding":[1,2]}`))
	f.Add([]byte(`{"format":"zonos-stream voice","version":1,"name":"..","embedding":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decode(data)
		if err != nil {
			return
		}
		if CheckName(v.Name) != nil || len(v.Embedding) != EmbeddingSize {
			t.Fatalf("decoded a voice that fails its checks: %q, %d values", v.Name, len(v.Embedding))
		}
		for _, x := range v.Embedding {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatal("decoded a non-finite embedding")
			}
		}
		again, err := encode(v)
		if err != nil {
			t.Fatalf("a decoded voice does not encode: %v", err)
		}
		if w, err := decode(again); err != nil || w.Name != v.Name {
			t.Fatalf("re-encoded voice does not read back: %v", err)
		}
	})
}
