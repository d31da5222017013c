package sample

import (
	"math"
	"testing"
)

func TestRepetitionPenalty(t *testing.T) {
	// One codebook of width 6: token 1 twice (penalty²), token 4 once,
	// MASK-like 7 clamps to V−1 = 5, a negative token is ignored.
	logits := []float32{1, 2, -2, 3, -1, 4}
	RepetitionPenalty(logits, 6, [][]int32{{1, 1, 4, 7, -1}}, 2)
	want := []float32{1, 0.5, -2, 3, -2, 2}
	for i := range want {
		if logits[i] != want[i] {
			t.Fatalf("got %v, want %v", logits, want)
		}
	}
}

func TestFilters(t *testing.T) {
	p := []float32{0.5, 0.25, 0.125, 0.125}
	q := append([]float32(nil), p...)
	TopK(q, 4, 2)
	if q[2] != 0 || q[3] != 0 || math.Abs(float64(q[0])-2.0/3) > 1e-6 {
		t.Errorf("top-k 2: %v", q)
	}
	q = append([]float32(nil), p...)
	TopP(q, 4, 0.6) // keeps 0.5 and 0.25 (mass before 0.25 is 0.5 ≤ 0.6)
	if q[2] != 0 || q[1] == 0 {
		t.Errorf("top-p 0.6: %v", q)
	}
	q = append([]float32(nil), p...)
	MinP(q, 4, 0.3) // cut = 0.15
	if q[2] != 0 || q[3] != 0 || q[1] == 0 {
		t.Errorf("min-p 0.3: %v", q)
	}
}

func TestSoftmaxTemperature(t *testing.T) {
	l := []float32{0, float32(math.Log(3)), float32(math.Inf(-1))}
	p := make([]float32, 3)
	Softmax(p, l, 3, 1)
	if math.Abs(float64(p[1])-0.75) > 1e-6 || p[2] != 0 {
		t.Errorf("softmax %v", p)
	}
	Softmax(p, l, 3, 0.5) // 3² : 1
	if math.Abs(float64(p[1])-0.9) > 1e-6 {
		t.Errorf("softmax T=0.5 %v", p)
	}
}

func TestUnifiedIdentity(t *testing.T) {
	// linear 1, conf 0, quad 0 gives softmax(log p) = p.
	p := []float32{0.6, 0.3, 0.1}
	q := append([]float32(nil), p...)
	Unified(q, 3, 1, 0, 0)
	for i := range p {
		if math.Abs(float64(q[i]-p[i])) > 1e-6 {
			t.Fatalf("unified identity: %v", q)
		}
	}
}

func TestGreedyIgnoresNoise(t *testing.T) {
	s := New(Params{Temperature: 0, RepetitionPenalty: 1}, nil)
	got := s.Sample([]float32{0, 5, 1, 7, 7, 2}, 3, nil)
	if got[0] != 1 || got[1] != 0 {
		t.Fatalf("greedy %v (first maximum wins)", got)
	}
}

// TestDrawFollowsDistribution: the exponential race draws tokens with the
// probabilities it is given.
func TestDrawFollowsDistribution(t *testing.T) {
	noise := NewPhilox(42)
	p := []float32{0.7, 0.2, 0.1, 0}
	counts := make([]int, 4)
	q := make([]float32, 4)
	const n = 20000
	for i := 0; i < n; i++ {
		noise.Exp(q)
		counts[Draw(p, q, 4)[0]]++
	}
	for i, want := range p {
		got := float64(counts[i]) / n
		if math.Abs(got-float64(want)) > 0.015 {
			t.Errorf("token %d drawn %.3f of the time, want %.2f", i, got, want)
		}
	}
}

func TestPhiloxReproducible(t *testing.T) {
	a, b, c := make([]float32, 9), make([]float32, 9), make([]float32, 9)
	NewPhilox(1).Exp(a)
	NewPhilox(1).Exp(b)
	NewPhilox(2).Exp(c)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different noise")
		}
		if a[i] <= 0 {
			t.Fatalf("Exp(1) draw %g ≤ 0", a[i])
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 1 and 2 gave the same noise")
	}
}

func TestValidate(t *testing.T) {
	bad := []Params{
		{Temperature: -1, RepetitionPenalty: 1},
		{Temperature: 1, TopP: 2, RepetitionPenalty: 1},
		{Temperature: 1, TopK: -1, RepetitionPenalty: 1},
		{Temperature: 1, RepetitionPenalty: 0},
	}
	for _, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestProbs: after a sampled draw Probs holds one distribution per row (the
// filtered mass sums to 1 and the drawn token has some); after a greedy
// draw it is nil.
func TestProbs(t *testing.T) {
	logits := []float32{1, 2, 3, 0, 4, -1, 0.5, 2.5}
	s := New(Params{Temperature: 1, TopK: 3}, &Fixed{Q: []float32{1, 2, 3, 4, 1, 2, 3, 4}})
	tok := s.Sample(append([]float32(nil), logits...), 4, nil)
	p := s.Probs()
	if len(p) != len(logits) {
		t.Fatalf("Probs has %d values, want %d", len(p), len(logits))
	}
	for c := 0; c < 2; c++ {
		sum := 0.0
		for _, v := range p[c*4 : (c+1)*4] {
			sum += float64(v)
		}
		if math.Abs(sum-1) > 1e-6 || p[c*4+int(tok[c])] == 0 {
			t.Errorf("row %d: probabilities %v sum to %g, token %d drawn", c, p[c*4:(c+1)*4], sum, tok[c])
		}
	}
	s.Params = Params{Temperature: 0}
	s.Sample(append([]float32(nil), logits...), 4, nil)
	if s.Probs() != nil {
		t.Errorf("after a greedy draw Probs is %v, want nil", s.Probs())
	}
}
