package bench

import (
	"fmt"
	"io"
	"strings"
)

// Peer is a PyTorch reference figure measured on H200 test machines
// (../shared/docs/GPU.md, "The peer to beat": Zonos bc40d98 with its CUDA
// graph, random weights of the real hybrid shapes, median of the range over
// three machines — we compare against the range's best, lowest value).
type Peer struct {
	What   string
	Ms     float64 // the best figure of the measured range
	Range  string
	Target string
}

// Peers are the figures `zonos bench` prints beside ours.
var Peers = map[string]Peer{
	"decode":  {"decode step, CUDA graph, CFG batch 2", 3.76, "3.76–4.54 ms", "≤ 0.85 ms"},
	"prefill": {"prefill, 80-token prefix, batch 2", 59, "59–107 ms", "≤ 5 ms"},
	"loop":    {"generate loop per step (graph + sampler + Python)", 5.1, "≈ 5.1 ms", "≥ 12× real time"},
	"ttfa":    {"TTFA, Sonata streaming code (chunk 16)", 379, "379–496 ms p50", "≤ 25 ms p50"},
}

// Markdown writes the report for people (docs/bench/<date>-<device>.md).
func (r *Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "# zonos bench — %s, %s\n\n", r.Device, r.Date)
	if r.Reduced() {
		fmt.Fprintf(w, "Backend `%s`, %s backbone **reduced to %d of its %d layers** (the real widths, heads and attention pattern; random bf16 weights, %.3f GB read per CFG decode step), DAC 44 kHz of the real shapes; %s. Times from the backend's own clock; p50 / p90 over n runs.\n\n",
			r.Backend, r.Variant, r.Layers, r.ModelLayers, r.StepGB, r.GoVersion)
		fmt.Fprintf(w, "A quick check that the machine runs the engine, not the model's speed: each backbone layer costs what it does in the full model, but the decode step, prefill, TTFA and generation figures below are for %d layers, not %d, so no PyTorch ratio is given. The vocoder is the real one: its real-time factor is the full model's.\n\n",
			r.Layers, r.ModelLayers)
	} else {
		fmt.Fprintf(w, "Backend `%s`, %s backbone with random bf16 weights of the real shapes (%.3f GB read per CFG decode step), DAC 44 kHz; %s. Times from the backend's own clock; p50 / p90 over n runs.\n\n",
			r.Backend, r.Variant, r.StepGB, r.GoVersion)
	}
	if r.Plan != "" {
		fmt.Fprintf(w, "Plan: %s.\n\n", r.Plan)
	} else {
		fmt.Fprintf(w, "Plan: none to choose (the %s backend runs each op one way).\n\n", r.Backend)
	}
	fmt.Fprintln(w, "| measurement | ours p50 | ours p90 | n | PyTorch reference (H200) | reference ÷ ours |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	row := func(name string, s Stat, unit string, peer string) {
		p, ok := Peers[peer]
		ref, rat := "—", "—"
		if ok && !r.Reduced() {
			ref = p.Range
			if s.P50 > 0 {
				rat = fmt.Sprintf("%.2f×", p.Ms/s.P50)
			}
		}
		fmt.Fprintf(w, "| %s | %.3f %s | %.3f %s | %d | %s | %s |\n", name, s.P50, unit, s.P90, unit, s.N, ref, rat)
	}
	row("decode step (CFG batch 2; guidance, sampling, tokens to the host included)", r.DecodeStep, "ms", "decode")
	if r.QueuedStep.N > 0 {
		row("the decode step in generation (each next step queued on the device before the tokens are read; host clock)", r.QueuedStep, "ms", "decode")
	}
	if r.EagerStep.N > 0 {
		row("the same decode step op by op (no step graph)", r.EagerStep, "ms", "decode")
	}
	row(fmt.Sprintf("prefill (%d positions)", r.PrefixLen), r.Prefill, "ms", "prefill")
	row(fmt.Sprintf("TTFA (%d-frame rollout, request → first committed sample)", r.Frames), r.TTFA, "ms", "ttfa")
	if r.FrameLatency.P50 > 0 {
		row(fmt.Sprintf("steady per-frame latency (budget %.2f ms)", r.BudgetMs), r.FrameLatency, "ms", "")
	} else {
		fmt.Fprintf(w, "| steady per-frame latency (budget %.2f ms) | — | — | 0 | — | — |\n", r.BudgetMs) // a rollout within the vocoder's first emission has no steady frames
	}
	if r.Reduced() {
		fmt.Fprintf(w, "| generation real-time factor (audio s / wall s, vocoder included) | %s× | %s× | %d | — | — |\n",
			ratioText(r.GenRTF.P50), ratioText(r.GenRTF.P90), r.GenRTF.N)
	} else {
		fmt.Fprintf(w, "| generation real-time factor (audio s / wall s, vocoder included) | %.2f× | %.2f× | %d | 1.4–1.9× | %.2f× |\n",
			r.GenRTF.P50, r.GenRTF.P90, r.GenRTF.N, r.GenRTF.P50/1.9)
	}
	fmt.Fprintf(w, "| vocoder real-time factor (streamed, chunk %d) | %s× | %s× | %d | — | — |\n", r.Chunk, ratioText(r.VocoderRTF.P50), ratioText(r.VocoderRTF.P90), r.VocoderRTF.N)
	if r.TTFAPrefill.N > 0 && r.TTFAFrame.N > 0 {
		fmt.Fprintf(w, "\nWhere the rollouts' TTFA goes (p50 from the request): utterance started on the engine at %.1f ms (text front end), prefix conditioning on the device at %.1f ms, prefill logits ready at %.1f ms (the prefill itself %.1f ms; the rest is setting up the utterance's state), first complete frame at %.1f ms (the decode steps of the codebook delay), first committed sample at %.1f ms (the steps for the vocoder's right context, and its first emission, %.2f ms).\n",
			r.TTFAStarted.P50, r.TTFACond.P50, r.TTFAPrefill.P50, r.TTFACompute.P50, r.TTFAFrame.P50, r.TTFA.P50, r.TTFAVocode.P50)
	}
	if r.FirstTTFAMs > 0 {
		fmt.Fprintf(w, "\nFirst utterance of the freshly built engine, everything cold (text front end, step recording, allocator, vocoder): TTFA %.1f ms against the p50 of %.1f ms above; the warm-up an app runs when it loads the model pays the difference before its first utterance.\n",
			r.FirstTTFAMs, r.TTFA.P50)
	}
	fmt.Fprintf(w, "\nWeight-read floor: %.3f GB ÷ %.0f GB/s read bandwidth (measured in this run; copy %.0f GB/s) = %.3f ms; the decode step p50 reaches **%.1f %%** of it.\n",
		r.StepGB, r.ReadGBs, r.CopyGBs, r.FloorMs, r.FloorPercent)
	if r.ReplayStepMs > 0 && r.DecodeStep.P50 > 0 {
		fmt.Fprintf(w, "The step graph alone, replayed back to back, each step fed by the one before on the device (device-side token feedback; no read-back or host work between steps): %.3f ms per step, so the host round trip is %.3f ms (%.0f %%) of the decode step above; generation queues each next step this way before it reads the tokens.\n",
			r.ReplayStepMs, r.DecodeStep.P50-r.ReplayStepMs, 100*(r.DecodeStep.P50-r.ReplayStepMs)/r.DecodeStep.P50)
	}
	if r.EagerStep.P50 > 0 && r.DecodeStep.P50 > 0 {
		fmt.Fprintf(w, "Decode step as generation runs it vs op by op, same run: %.2f× faster. First step of the first utterance (records the step graph where the backend keeps one): %.1f ms.\n",
			r.EagerStep.P50/r.DecodeStep.P50, r.FirstStepMs)
	}
	fmt.Fprintf(w, "Memory in use: %.2f GB. Model build: %.1f s.\n", r.MemoryGB, r.LoadSeconds)
	if sv := r.Serve; sv != nil {
		fmt.Fprintf(w, "\nSpeech server (`zonos serve`) on the same engine, %d POST /v1/audio/speech requests (%s) over loopback HTTP, one kept-alive connection: time to the first audio byte read by the client p50 %.2f ms (p90 %.2f), the engine's TTFA of the same requests p50 %.2f ms; the server and the socket add p50 %.2f ms (p90 %.2f) per request.\n",
			sv.Requests, sv.Format, sv.TTFB.P50, sv.TTFB.P90, sv.EngineTTFA.P50, sv.Overhead.P50, sv.Overhead.P90)
		if len(sv.Formats) > 0 {
			var parts []string
			for _, f := range sv.Formats {
				parts = append(parts, fmt.Sprintf("%s %.2f ms", f.Format, f.FirstAudioByte.P50))
			}
			fmt.Fprintf(w, "The other formats' first audio byte (past the file header; p50): %s — their codec frames hold the first samples back.\n", strings.Join(parts, ", "))
		}
	}
	if len(r.Batches) > 0 {
		fmt.Fprintln(w, "\nDecode step of several utterances at once (batched decoding: one backbone pass and one step graph for all, lockstep positions; guidance, sampling and tokens to the host included):")
		fmt.Fprintln(w, "\n| utterances | step p50 | step p90 | n | per utterance | audio generated per second of decoding | first step |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
		for _, b := range r.Batches {
			fmt.Fprintf(w, "| %d | %.3f ms | %.3f ms | %d | %.3f ms | %.1f× real time | %.1f ms |\n",
				b.N, b.Step.P50, b.Step.P90, b.Step.N, b.PerUtteranceMs, b.RTF, b.FirstStepMs)
		}
		fmt.Fprintf(w, "\nMemory in use after the batches: %.2f GB (the allocator keeps their freed states cached).\n", r.MemoryBatchGB)
	}
	if lf := r.LongForm; lf != nil {
		fmt.Fprintf(w, "\nLong-form reading: %.0f s of audio in %d parts of %d frames, each continuing from %d frames of the audio before it, streamed to a simulated player (pre-roll %.0f ms, real time):\n\n",
			lf.AudioSeconds, lf.Parts, lf.PartFrames, lf.ContextFrames, lf.PreRollMs)
		fmt.Fprintln(w, "| underruns | least lead | boundary p50 | boundary max | TTFA | generation | Go heap start → end (max) | device memory start → end (max) |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
		fmt.Fprintf(w, "| %d | %.0f ms | %.2f ms | %.2f ms | %.1f ms | %s× real time | %.1f → %.1f (%.1f) MB | %.2f → %.2f (%.2f) GB |\n",
			lf.Underruns, lf.MinLeadMs, lf.BoundaryP50Ms, lf.BoundaryMaxMs, lf.TTFAMs, ratioText(lf.RTF),
			lf.HeapStartMB, lf.HeapEndMB, lf.HeapMaxMB, lf.DevStartGB, lf.DevEndGB, lf.DevMaxGB)
		if len(lf.DevGB) > 0 {
			fmt.Fprintf(w, "\nAt every tenth of the parts: Go heap %s MB; device memory %s GB.\n", series(lf.HeapMB, "%.1f"), series(lf.DevGB, "%.2f"))
		}
		fmt.Fprintln(w, "\nA boundary is a part's last frame to the next part's first: its conditioning, prefill over the context and the eight decode steps of the codebook delay. Generation runs ahead of playback, so it is heard only if it outlasts the audio buffered (the least lead).")
	}
}

// ratioText is a real-time factor with one decimal, or two significant
// digits below 1 (a CPU's 0.021×).
func ratioText(x float64) string {
	if x >= 1 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2g", x)
}

// Reduced reports whether the backbone measured had fewer layers than the
// model (Options.Layers).
func (r *Report) Reduced() bool { return r.Layers > 0 && r.Layers < r.ModelLayers }

// Text is the terminal summary.
func (r *Report) Text(w io.Writer) {
	var b strings.Builder
	r.Markdown(&b)
	io.WriteString(w, b.String())
}

// FileName is docs/bench/<date>-<device>.md with the device reduced to a
// filename-safe word (…-<layers>of<model layers>-layers.md for a reduced
// backbone).
func (r *Report) FileName() string {
	dev := strings.ToLower(r.Device)
	dev = strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			return c
		}
		return '-'
	}, dev)
	for strings.Contains(dev, "--") {
		dev = strings.ReplaceAll(dev, "--", "-")
	}
	dev = strings.Trim(dev, "-")
	if len(dev) > 40 {
		dev = strings.TrimRight(dev[:40], "-")
	}
	if r.Reduced() {
		return fmt.Sprintf("%s-%s-%dof%d-layers.md", r.Date, dev, r.Layers, r.ModelLayers)
	}
	return r.Date + "-" + dev + ".md"
}

// series formats values as "a → b → c".
func series(vs []float64, f string) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprintf(f, v)
	}
	return strings.Join(s, " → ")
}
