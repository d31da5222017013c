package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"zonostream/engine/compute"
	"zonostream/engine/speaker"
	"zonostream/engine/weights"
	"zonostream/internal/check"
)

// Speaker bars from issue 8: features within 1e-3·max(1, max|ref|);
// embeddings with cosine ≥ 0.99999 and within 1e-3·max(1, max|ref|).
const (
	SpeakerFbankTol  = 1e-3
	SpeakerMinCosine = 0.99999
	SpeakerVecTol    = 1e-3
)

// Speaker compares engine/speaker against every golden pack in goldenDir
// whose directory name starts with "speaker-" (made by Zonos'
// SpeakerEmbeddingLDA, golden/README.md): wav16k (the 16 kHz resampling,
// through the Resampler installed with speaker.SetResampler), fbank
// (log-mel features from the golden wav16k), embedding (256-d) and lda
// (128-d), both from the golden fbank so each stage is judged on its own.
// A backend without the speaker ops gets SKIP results.
func Speaker(goldenDir string, b compute.Backend) []check.Result {
	packs, err := Packs(goldenDir, "speaker-")
	if err != nil {
		return []check.Result{check.Failure("speaker-*", "load", err)}
	}
	if len(packs) == 0 {
		return []check.Result{skip("speaker-*", "load", "no speaker-* pack in "+goldenDir)}
	}
	sb, ok := b.(compute.SpeakerBackend)
	var rs []check.Result
	for _, p := range packs {
		if !ok {
			for _, c := range []string{"wav16k", "fbank", "embedding", "lda"} {
				rs = append(rs, skip(p, c, fmt.Sprintf("backend %q does not implement compute.SpeakerOps", b.Name())))
			}
			continue
		}
		rs = append(rs, speakerPack(filepath.Join(goldenDir, p), p, sb)...)
	}
	return rs
}

func skip(pack, name, why string) check.Result {
	return check.Result{Pack: pack, Check: name, Status: check.Skip, Measured: "-", Tol: "-", Detail: why}
}

// relCheck is max |Δ| against tol·max(1, max|ref|).
func relCheck(pack, name string, got, ref []float32, tol float64) check.Result {
	if len(got) != len(ref) {
		return check.Failure(pack, name, fmt.Errorf("%d values, golden has %d", len(got), len(ref)))
	}
	d, m := check.MaxAbsDiff(got, ref)
	r := check.Compare(pack, name, d, tol*max(1, m))
	r.Detail = fmt.Sprintf("max|Δ|, max|ref| %.3g", m)
	return r
}

func vecChecks(pack, name string, got, ref []float32) []check.Result {
	if len(got) != len(ref) {
		return []check.Result{check.Failure(pack, name, fmt.Errorf("%d values, golden has %d", len(got), len(ref)))}
	}
	cos := check.Cosine(got, ref)
	st := check.Pass
	if !(cos >= SpeakerMinCosine) {
		st = check.Fail
	}
	return []check.Result{
		{Pack: pack, Check: name + ".cosine", Status: st, Measured: fmt.Sprintf("%.9f", cos), Tol: fmt.Sprintf("≥%.5f", SpeakerMinCosine)},
		relCheck(pack, name, got, ref, SpeakerVecTol),
	}
}

func speakerPack(dir, pack string, b compute.SpeakerBackend) []check.Result {
	io, err := weights.Open(filepath.Join(dir, "io.safetensors"))
	if err != nil {
		return []check.Result{check.Failure(pack, "load", err)}
	}
	defer io.Close()
	floats := func(name string) ([]float32, []int, error) {
		t, err := io.Tensor(name)
		if err != nil {
			return nil, nil, err
		}
		v, err := t.Float32s()
		return v, t.Shape, err
	}
	var rs []check.Result
	wav, _, err1 := floats("wav")
	wav16k, _, err2 := floats("wav16k")
	fbank, fshape, err3 := floats("fbank")
	emb, _, err4 := floats("embedding")
	lda, _, err5 := floats("lda")
	for _, e := range []error{err1, err2, err3, err4, err5} {
		if e != nil {
			return []check.Result{check.Failure(pack, "load", e)}
		}
	}
	rate := 24000 // golden/README.md: wav is 2 s at 24 kHz; io.json says so too
	if r, err := packRate(dir); err == nil {
		rate = r
	}
	if got, err := speaker.ResampleTo16k(wav, rate); err != nil {
		rs = append(rs, skip(pack, "wav16k", err.Error()))
	} else {
		rs = append(rs, relCheck(pack, "wav16k", got, wav16k, SpeakerFbankTol))
	}
	got, F, err := speaker.LogMel(wav16k)
	if err != nil {
		rs = append(rs, check.Failure(pack, "fbank", err))
	} else if len(fshape) != 3 || fshape[2] != F {
		rs = append(rs, check.Failure(pack, "fbank", fmt.Errorf("%d frames, golden shape %v", F, fshape)))
	} else {
		rs = append(rs, relCheck(pack, "fbank", got, fbank, SpeakerFbankTol))
	}
	m, err := speaker.Load(filepath.Join(dir, speaker.WeightsFile), filepath.Join(dir, speaker.LDAFile), b)
	if err != nil {
		return append(rs, check.Failure(pack, "embedding", err))
	}
	defer m.Close()
	if len(fshape) != 3 {
		return append(rs, check.Failure(pack, "embedding", fmt.Errorf("golden fbank shape %v", fshape)))
	}
	v, err := m.FromFeatures(context.Background(), fbank, fshape[2])
	if err != nil {
		return append(rs, check.Failure(pack, "embedding", err))
	}
	rs = append(rs, vecChecks(pack, "embedding", v.Embedding, emb)...)
	rs = append(rs, vecChecks(pack, "lda", v.LDA, lda)...)
	return rs
}

// packRate reads input_sample_rate from a speaker pack's io.json.
func packRate(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "io.json"))
	if err != nil {
		return 0, err
	}
	var meta struct {
		Rate int `json:"input_sample_rate"`
	}
	if err := json.Unmarshal(data, &meta); err != nil || meta.Rate <= 0 {
		return 0, fmt.Errorf("%s/io.json: no input_sample_rate (%v)", dir, err)
	}
	return meta.Rate, nil
}
