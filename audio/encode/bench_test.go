package encode

import (
	"io"
	"testing"
)

// BenchmarkEncode encodes 10 s of the test signal in 4096-sample pieces
// per iteration; the x-realtime figure is 10 s over the time taken.
func BenchmarkEncode(b *testing.B) {
	x := testSignal()
	for len(x) < 10*inRate {
		x = append(x, x...)
	}
	x = x[:10*inRate]
	for _, c := range []struct {
		f Format
		o Options
	}{{WAV, Options{}}, {PCM, Options{Rate: 24000}}, {FLAC, Options{}}, {Opus, Options{}}, {MP3, Options{}}} {
		b.Run(string(c.f)+"/"+rateName(c.o.Rate), func(b *testing.B) {
			for b.Loop() {
				e, err := New(c.f, io.Discard, inRate, c.o)
				if err != nil {
					b.Fatal(err)
				}
				for at := 0; at < len(x); at += 4096 {
					if err := e.Write(x[at:min(len(x), at+4096)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(10/(b.Elapsed().Seconds()/float64(b.N)), "x-realtime")
		})
	}
}
