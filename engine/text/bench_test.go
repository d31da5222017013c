package text

import "testing"

// BenchmarkPrepare is the front end's cost for one typical sentence.
func BenchmarkPrepare(b *testing.B) {
	const s = "It would be nice to have time for testing, indeed. In 1905, it cost $5.50."
	for b.Loop() {
		if _, _, err := Prepare(s, "en-us"); err != nil {
			b.Fatal(err)
		}
	}
}
