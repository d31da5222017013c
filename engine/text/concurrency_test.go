package text_test

import (
	"fmt"
	"sync"
	"testing"

	"zonostream/internal/conformance"
)

// TestConcurrentPhonemize phonemizes golden cases from many goroutines at
// once, in several languages so voices switch under contention, and checks
// every answer. Run with -race: espeak-ng is not thread-safe, so any call
// that escaped the package's lock would corrupt results or trip the detector.
func TestConcurrentPhonemize(t *testing.T) {
	cases := goldenCases(t)
	workers, rounds := 16, 3
	if testing.Short() {
		rounds = 1
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds * len(cases) {
				c := cases[(w*7+k)%len(cases)] // each worker starts elsewhere
				if o := conformance.CheckText(c); !o.IDsOK {
					errs <- fmt.Errorf("worker %d: %q (%s): got %q, err %v", w, c.Text, c.Language, o.Got.Phonemes, o.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
