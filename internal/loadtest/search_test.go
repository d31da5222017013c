package loadtest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestSearchDoublesThenBisects: against a server good up to `capacity`
// streams, the search doubles from 1 to the first bad N, then bisects to
// the capacity; it stops at its limit when every N is good.
func TestSearchDoublesThenBisects(t *testing.T) {
	for _, c := range []struct {
		capacity, most int
		want           int
		tries          []int
	}{
		{capacity: 11, most: 256, want: 11, tries: []int{1, 2, 4, 8, 16, 12, 10, 11}},
		{capacity: 8, most: 256, want: 8, tries: []int{1, 2, 4, 8, 16, 12, 10, 9}},
		{capacity: 0, most: 256, want: 0, tries: []int{1}},
		{capacity: 1, most: 256, want: 1, tries: []int{1, 2}},
		{capacity: 100, most: 20, want: 20, tries: []int{1, 2, 4, 8, 16, 20}},
		{capacity: 17, most: 20, want: 17, tries: []int{1, 2, 4, 8, 16, 20, 18, 17}},
	} {
		var tries []int
		got, err := search(c.most, func(n int) (bool, error) {
			tries = append(tries, n)
			return n <= c.capacity, nil
		})
		if err != nil || got != c.want || !reflect.DeepEqual(tries, c.tries) {
			t.Errorf("capacity %d, limit %d: found %d (%v) after trying %v; want %d after %v", c.capacity, c.most, got, err, tries, c.want, c.tries)
		}
	}
	boom := errors.New("unreachable")
	if _, err := search(64, func(n int) (bool, error) {
		if n == 4 {
			return false, boom
		}
		return true, nil
	}); !errors.Is(err, boom) {
		t.Errorf("a run's error: %v, want it returned", err)
	}
}

func TestStatNearestRank(t *testing.T) {
	s := stat([]float64{5, 1, 4, 2, 3})
	if s.P50 != 3 || s.P99 != 5 || s.N != 5 {
		t.Errorf("stat of 1..5: %+v; want p50 3, p99 the slowest (5)", s)
	}
	var hundred []float64
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, float64(i))
	}
	if s := stat(hundred); s.P50 != 50 || s.P99 != 99 {
		t.Errorf("stat of 1..100: %+v; want p50 50, p99 99", s)
	}
	if s := stat(nil); s.N != 0 {
		t.Errorf("stat of none: %+v", s)
	}
}

func TestCompareAudio(t *testing.T) {
	a := []byte{1, 2, 3, 4, 5, 6}
	if m := compareAudio(a, []byte{1, 2, 3, 4, 5, 6}); m != "" {
		t.Errorf("equal audio: %q", m)
	}
	if m := compareAudio(a, []byte{1, 2, 3, 9, 5, 6}); !strings.Contains(m, "sample 1 (byte 3)") {
		t.Errorf("a differing byte: %q; want it named", m)
	}
	if m := compareAudio(a, a[:4]); !strings.Contains(m, "6 bytes under load, 4 alone") {
		t.Errorf("a shorter stream alone: %q", m)
	}
}

func TestRefusalLabels(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		label  string
		fatal  error
	}{
		{503, "queue_full", "503 queue_full", nil},
		{429, "too_many_streams", "429 too_many_streams", nil},
		{500, "", "500", nil},
		{401, "missing_api_key", "", ErrUnauthorized},
		{400, "", "", ErrRefused},
		{403, "host_not_allowed", "", ErrRefused},
	} {
		label, err := refusal(c.status, c.code, "the server's words")
		if label != c.label || !errors.Is(err, c.fatal) || (c.fatal == nil) != (err == nil) {
			t.Errorf("%d %s: label %q, error %v; want %q, %v", c.status, c.code, label, err, c.label, c.fatal)
		}
	}
}

func TestValidPCM(t *testing.T) {
	for _, c := range []struct {
		bytes int64
		rate  int
		valid bool
	}{
		{2 * 512 * 43, 44100, true},
		{2*512*43 + 2, 44100, false}, // a sample past a frame
		{2*512*43 + 1, 44100, false}, // half a sample
		{2 * 1000, 24000, true},      // resampled: whole samples are enough
		{2*1000 + 1, 24000, false},
	} {
		if got := validPCM(c.bytes, c.rate); got != c.valid {
			t.Errorf("%d bytes at %d Hz: valid %v, want %v", c.bytes, c.rate, got, c.valid)
		}
	}
}
