package audio

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestRingSizing(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		rate int
		want int
	}{
		{100 * time.Millisecond, 44100, 4410},
		{time.Millisecond, 44100, 45}, // 44.1 rounds up
		{time.Second, 16000, 16000},
	} {
		r, err := NewRing(c.d, c.rate)
		if err != nil {
			t.Fatal(err)
		}
		if r.Cap() != c.want {
			t.Errorf("NewRing(%v, %d).Cap() = %d, want %d", c.d, c.rate, r.Cap(), c.want)
		}
	}
	for _, c := range []struct {
		d    time.Duration
		rate int
	}{{0, 44100}, {-time.Second, 44100}, {time.Second, 0}, {MaxRingDuration + time.Second, 44100}} {
		if _, err := NewRing(c.d, c.rate); err == nil {
			t.Errorf("NewRing(%v, %d): no error", c.d, c.rate)
		}
	}
	if _, err := NewRingSamples(0); err == nil {
		t.Error("NewRingSamples(0): no error")
	}
}

func TestRingSequential(t *testing.T) {
	r, _ := NewRingSamples(5)
	if n := r.Write([]float32{1, 2, 3}); n != 3 {
		t.Fatalf("Write 3 into empty cap-5 ring = %d", n)
	}
	if n := r.Write([]float32{4, 5, 6, 7}); n != 2 {
		t.Fatalf("Write 4 into ring with 2 free = %d", n)
	}
	if r.Len() != 5 || r.Free() != 0 {
		t.Fatalf("full ring: Len %d Free %d", r.Len(), r.Free())
	}
	if n := r.Write([]float32{9}); n != 0 {
		t.Fatalf("Write into full ring = %d", n)
	}
	p := make([]float32, 4)
	if n := r.Read(p); n != 4 || p[0] != 1 || p[3] != 4 {
		t.Fatalf("Read = %d %v", n, p)
	}
	// Wrap around the end of the buffer.
	if n := r.Write([]float32{6, 7, 8}); n != 3 {
		t.Fatalf("wrapping Write = %d", n)
	}
	p = make([]float32, 10)
	n := r.Read(p)
	want := []float32{5, 6, 7, 8}
	if n != len(want) {
		t.Fatalf("Read after wrap = %d, want %d", n, len(want))
	}
	for i, v := range want {
		if p[i] != v {
			t.Fatalf("Read after wrap = %v, want %v", p[:n], want)
		}
	}
	if n := r.Read(p); n != 0 {
		t.Fatalf("Read from empty ring = %d", n)
	}
	if r.Written() != 8 || r.Consumed() != 8 {
		t.Fatalf("Written %d Consumed %d, want 8 8", r.Written(), r.Consumed())
	}
}

func TestRingReset(t *testing.T) {
	r, _ := NewRingSamples(8)
	r.Write([]float32{1, 2, 3, 4, 5})
	r.Read(make([]float32, 2))
	r.Reset()
	if r.Len() != 0 {
		t.Fatalf("Len after Reset = %d", r.Len())
	}
	r.Write([]float32{10, 11})
	p := make([]float32, 8)
	if n := r.Read(p); n != 2 || p[0] != 10 || p[1] != 11 {
		t.Fatalf("Read after Reset = %v, want [10 11]", p[:n])
	}
	if r.Free() != 8 {
		t.Fatalf("Free after draining = %d, want 8", r.Free())
	}
}

// TestRingProperty runs a producer and a consumer with random chunk sizes and
// random pauses and checks that the consumer sees exactly 0, 1, 2, … : no
// sample lost, duplicated or reordered. Values are small integers, exact in
// float32.
func TestRingProperty(t *testing.T) {
	trials, total := 24, 100000
	if testing.Short() {
		trials, total = 8, 30000
	}
	for trial := range trials {
		seed := uint64(trial) + 1
		rng := rand.New(rand.NewPCG(seed, 7))
		capacity := 1 + rng.IntN(700)
		r, _ := NewRingSamples(capacity)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // producer
			defer wg.Done()
			prng := rand.New(rand.NewPCG(seed, 11))
			chunk := make([]float32, 1024)
			next := 0
			for next < total {
				k := min(1+prng.IntN(len(chunk)), total-next)
				for i := range k {
					chunk[i] = float32(next + i)
				}
				done := 0
				for done < k {
					done += r.Write(chunk[done:k])
					jitter(prng)
				}
				next += k
			}
		}()
		crng := rand.New(rand.NewPCG(seed, 13))
		buf := make([]float32, 1024)
		want := 0
		for want < total {
			n := r.Read(buf[:crng.IntN(len(buf)+1)])
			for _, v := range buf[:n] {
				if v != float32(want) {
					t.Fatalf("seed %d cap %d: got sample %v at position %d", seed, capacity, v, want)
				}
				want++
			}
			jitter(crng)
		}
		wg.Wait()
		if n := r.Read(buf); n != 0 {
			t.Fatalf("seed %d: %d extra samples after the end", seed, n)
		}
	}
}

// TestRingPropertyReset adds random Resets by the producer: the consumer
// must see a strictly increasing sequence (nothing duplicated or reordered)
// that contains every sample written after the last Reset.
func TestRingPropertyReset(t *testing.T) {
	trials, total := 24, 60000
	if testing.Short() {
		trials, total = 8, 30000
	}
	for trial := range trials {
		seed := uint64(trial) + 100
		r, _ := NewRingSamples(1 + rand.New(rand.NewPCG(seed, 1)).IntN(500))
		var lastReset int
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			prng := rand.New(rand.NewPCG(seed, 2))
			chunk := make([]float32, 300)
			next := 0
			for next < total {
				if prng.IntN(20) == 0 {
					r.Reset()
					lastReset = next
				}
				k := min(1+prng.IntN(len(chunk)), total-next)
				for i := range k {
					chunk[i] = float32(next + i)
				}
				for w := 0; w < k; {
					w += r.Write(chunk[w:k])
					jitter(prng)
				}
				next += k
			}
		}()
		crng := rand.New(rand.NewPCG(seed, 3))
		buf := make([]float32, 400)
		prev := float32(-1)
		var seen []float32
		consume := func() int {
			n := r.Read(buf[:crng.IntN(len(buf)+1)])
			for _, v := range buf[:n] {
				if v <= prev {
					t.Fatalf("seed %d: sample %v after %v", seed, v, prev)
				}
				prev = v
				seen = append(seen, v)
			}
			return n
		}
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
			}
			consume()
			jitter(crng)
		}
		wg.Wait()
		for consume() > 0 || r.Len() > 0 {
		}
		// Every sample from lastReset on must be there, in order, at the end.
		if len(seen) < total-lastReset {
			t.Fatalf("seed %d: saw %d samples, but %d were written after the last Reset", seed, len(seen), total-lastReset)
		}
		tail := seen[len(seen)-(total-lastReset):]
		for i, v := range tail {
			if v != float32(lastReset+i) {
				t.Fatalf("seed %d: after the last Reset at %d, position %d holds %v", seed, lastReset, i, v)
			}
		}
	}
}

// jitter pauses a side for a random, mostly tiny, time so the interleavings
// vary: nothing, a yield, or a short sleep.
func jitter(rng *rand.Rand) {
	switch rng.IntN(256) {
	case 0:
		time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
	case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16:
		runtime.Gosched()
	}
}

func TestRingReadDoesNotAllocate(t *testing.T) {
	r, _ := NewRingSamples(1000)
	src := make([]float32, 300)
	dst := make([]float32, 256)
	allocs := testing.AllocsPerRun(100, func() {
		r.Write(src)
		r.Read(dst)
		r.Read(dst)
	})
	if allocs != 0 {
		t.Fatalf("Write+Read allocate %.1f times per run, want 0", allocs)
	}
}

func BenchmarkRingWriteRead(b *testing.B) {
	r, _ := NewRingSamples(4410)
	src := make([]float32, 512)
	dst := make([]float32, 441)
	b.SetBytes(512 * 4)
	for b.Loop() {
		r.Write(src)
		for r.Len() > 0 {
			r.Read(dst)
		}
	}
}
