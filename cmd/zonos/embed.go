package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"zonostream/audio"
	"zonostream/engine/compute"
	"zonostream/engine/speaker"
	"zonostream/engine/weights"
)

func init() {
	register("embed", "make a voice's 128-d speaker vector from a clip (WAV, FLAC, MP3, Ogg Vorbis)", runEmbed)
	installSpeakerResampler()
}

// installSpeakerResampler gives engine/speaker the torchaudio-exact
// resampler (used by EmbedAt and the speaker-* wav16k conformance check).
func installSpeakerResampler() {
	speaker.SetResampler(func(from, to int) (speaker.Resampler, error) {
		return audio.NewResampler(from, to)
	})
}

func runEmbed(args []string) int {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: zonos embed [flags] clip.(wav|flac|mp3|ogg)\n\nPrints a summary of the clip's speaker vector and, with -o, writes it (.npy or .safetensors).\n\nflags:")
		fs.PrintDefaults()
	}
	out := fs.String("o", "", "write the vector here: .npy (float32 [128]) or .safetensors (tensor \"speaker\" [1, 128])")
	wpath := fs.String("weights", "", "speaker ResNet checkpoint (default: "+speaker.WeightsFile+" of "+weights.SpeakerRepo+" in the Hugging Face cache)")
	lpath := fs.String("lda", "", "speaker LDA checkpoint (default: "+speaker.LDAFile+" next to the ResNet checkpoint or in the cache)")
	backend := addBackendFlags(fs, "auto")
	maxSec := fs.Float64("max-seconds", audio.DefaultClipSeconds, "use at most this many seconds of the clip")
	noCache := fs.Bool("no-cache", false, "do not read or write the embedding cache")
	cacheDir := fs.String("cache-dir", "", "embedding cache directory (default: the user cache dir's zonos-stream/speaker)")
	full := fs.Bool("print", false, "print every value, not just the summary")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if !(*maxSec > 0) || math.IsInf(*maxSec, 0) {
		fmt.Fprintln(os.Stderr, "zonos embed: -max-seconds must be positive")
		return 2
	}
	if *out != "" {
		if ext := strings.ToLower(filepath.Ext(*out)); ext != ".npy" && ext != ".safetensors" {
			fmt.Fprintf(os.Stderr, "zonos embed: output %s: use a .npy or .safetensors name\n", *out)
			return 2
		}
	}
	clipPath := fs.Arg(0)
	clip, err := audio.LoadClip(clipPath, audio.ClipOptions{MaxSeconds: *maxSec, Rate: speaker.SampleRate})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos embed:", err)
		return 1
	}
	if clip.Notice != "" {
		fmt.Fprintln(os.Stderr, "note:", clip.Notice)
	}
	if err := speaker.CheckSamples(clip.Samples); err != nil {
		fmt.Fprintln(os.Stderr, "zonos embed:", err)
		return 1
	}
	wp, lp, err := speakerFiles(*wpath, *lpath, "pass --weights and --lda")
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos embed:", err)
		return 1
	}
	b, err := openBackend(*backend)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos embed:", err)
		return 2
	}
	defer b.Close()
	sb, ok := b.(compute.SpeakerBackend)
	if !ok {
		fmt.Fprintf(os.Stderr, "zonos embed: backend %q does not implement the speaker model's ops yet; use --backend cpu\n", b.Name())
		return 2
	}
	t0 := time.Now()
	m, err := speaker.Load(wp, lp, sb)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos embed:", err)
		return 1
	}
	defer m.Close()
	loadDur := time.Since(t0)
	var cache *speaker.Cache
	if !*noCache {
		if *cacheDir != "" {
			cache = &speaker.Cache{Dir: *cacheDir}
		} else if cache, err = speaker.DefaultCache(); err != nil {
			fmt.Fprintln(os.Stderr, "warning:", err, "(embedding without a cache)")
			cache = nil
		}
		if cache != nil {
			cache.OnStoreError = func(err error) { fmt.Fprintln(os.Stderr, "warning:", err) }
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	t1 := time.Now()
	v, hit, err := m.EmbedCached(ctx, cache, clip.Samples)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "zonos embed: interrupted")
			return 130
		}
		fmt.Fprintln(os.Stderr, "zonos embed:", err)
		return 1
	}
	embedDur := time.Since(t1)
	src := fmt.Sprintf("%s, %d Hz, %d ch", clip.Format, clip.SourceRate, clip.Channels)
	fmt.Printf("clip      %s (%s), %.2f s used\n", clipPath, src, clip.Seconds())
	fmt.Printf("model     ResNet in_planes %d blocks %v → %d → LDA %d (%s backend, loaded in %.2f s)\n",
		m.Config.InPlanes, m.Config.Blocks, m.Config.Embed, m.Config.LDA, b.Name(), loadDur.Seconds())
	if hit {
		fmt.Println("embedding from cache")
	} else {
		fmt.Printf("embedding computed in %.2f s (%.3f s per second of audio)\n", embedDur.Seconds(), embedDur.Seconds()/clip.Seconds())
	}
	fmt.Println("vector   ", summarize(v))
	if *full {
		for i, x := range v {
			fmt.Printf("%4d % .6f\n", i, x)
		}
	}
	if *out != "" {
		if err := writeVector(*out, v, clipPath); err != nil {
			fmt.Fprintln(os.Stderr, "zonos embed:", err)
			return 1
		}
		fmt.Println("wrote    ", *out)
	}
	return 0
}

// speakerFiles resolves the checkpoint paths: explicit flags, the LDA next
// to an explicit ResNet checkpoint, else the Hugging Face cache. flags is
// how the calling command takes the files instead, for the message when
// the cache lacks them.
func speakerFiles(wp, lp, flags string) (string, string, error) {
	if wp != "" && lp == "" {
		lp = filepath.Join(filepath.Dir(wp), speaker.LDAFile)
	}
	if wp != "" && lp != "" {
		return wp, lp, nil
	}
	c, err := weights.DefaultCache()
	if err != nil {
		return "", "", err
	}
	var paths [2]string
	for i, name := range []string{speaker.WeightsFile, speaker.LDAFile} {
		if i == 1 && lp != "" {
			paths[1] = lp
			continue
		}
		e, ok, err := c.Lookup(weights.RepoFile{Repo: weights.SpeakerRepo, Name: name}, weights.DefaultRevision)
		if err != nil {
			return "", "", err
		}
		if !ok {
			return "", "", fmt.Errorf("the speaker model %s/%s is not in the Hugging Face cache %s: run 'zonos pull' (it downloads only the files missing) or %s",
				weights.SpeakerRepo, name, c.Dir, flags)
		}
		paths[i] = e.Path
	}
	return paths[0], paths[1], nil
}

// summarize is a one-line description of a vector: size, norm, range, head.
func summarize(v []float32) string {
	var ss float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		ss += float64(x) * float64(x)
		lo, hi = min(lo, float64(x)), max(hi, float64(x))
	}
	var head []string
	for _, x := range v[:min(6, len(v))] {
		head = append(head, fmt.Sprintf("%.4f", x))
	}
	return fmt.Sprintf("[%d] L2 %.4f, min %.4f, max %.4f: %s …", len(v), math.Sqrt(ss), lo, hi, strings.Join(head, " "))
}

// writeVector writes v as .npy (float32 [n]) or safetensors ("speaker"
// [1, n], which is what the Zonos conditioner takes).
func writeVector(path string, v []float32, clip string) error {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	if strings.EqualFold(filepath.Ext(path), ".safetensors") {
		return weights.Write(path, []*weights.Tensor{{Name: "speaker", DType: weights.F32, Shape: []int{1, len(v)}, Data: raw}},
			map[string]string{"format": "zonos-stream speaker embedding", "clip": filepath.Base(clip)})
	}
	hdr := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", len(v))
	pad := 64 - (10+len(hdr)+1)%64
	hdr += strings.Repeat(" ", pad%64) + "\n"
	var buf bytes.Buffer
	buf.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&buf, binary.LittleEndian, uint16(len(hdr)))
	buf.WriteString(hdr)
	buf.Write(raw)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
