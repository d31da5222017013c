package bench

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
)

// TestRunTiny runs the whole harness on the tiny shapes: every figure is
// filled and the reports render (speed itself is not asserted).
func TestRunTiny(t *testing.T) {
	zc, dc := tinyConfigs(t)
	o := Options{Variant: zonos.Hybrid, Runs: 2, DecodeSteps: 3, PrefixLen: 30, Frames: 12, FirstChunk: 2, Chunk: 4,
		BandwidthMB: 8, Seed: 1, Model: zc, DAC: &dc, Batches: []int{1, 3}, LongFormSeconds: 0.5, LongFormPartFrames: 15}
	var phases []string
	r, err := Run(context.Background(), cpu.New(0), o, func(s string) { phases = append(phases, s) })
	if err != nil {
		t.Fatal(err)
	}
	if r.DecodeStep.N != 3 || r.QueuedStep.N != 3 || r.Prefill.N != 2 || r.TTFA.N != 2 || r.VocoderRTF.N != 2 {
		t.Errorf("counts: %+v", r)
	}
	if !(r.TTFAPrefill.N == 2 && r.TTFACompute.P50 > 0 && r.TTFACompute.P50 <= r.TTFAPrefill.P50 && r.TTFAPrefill.P50 < r.TTFAFrame.P50 && r.TTFAFrame.P50 <= r.TTFA.P50) {
		t.Errorf("TTFA breakdown: prefill %+v, first frame %+v, first sample %+v", r.TTFAPrefill, r.TTFAFrame, r.TTFA)
	}
	if !(r.TTFAStarted.N == 2 && r.TTFAStarted.P50 > 0 && r.TTFAStarted.P50 <= r.TTFACond.P50 && r.TTFACond.P50+r.TTFACompute.P50 <= r.TTFAPrefill.P50) {
		t.Errorf("TTFA set-up stamps: started %+v, conditioned %+v, prefill %+v (compute %+v)", r.TTFAStarted, r.TTFACond, r.TTFAPrefill, r.TTFACompute)
	}
	if r.StepGB <= 0 || r.ReadGBs <= 0 || r.CopyGBs <= 0 || r.FloorMs <= 0 || r.FloorPercent <= 0 || r.TTFA.P50 <= 0 || r.FirstTTFAMs <= 0 || r.GenRTF.P50 <= 0 || r.MemoryGB <= 0 {
		t.Errorf("empty figures: %+v", r)
	}
	if len(r.Batches) != 2 || r.Batches[1].N != 3 || r.Batches[1].Step.N != 3 || r.Batches[1].Step.P50 <= 0 || r.Batches[1].RTF <= 0 {
		t.Errorf("batched steps: %+v", r.Batches)
	}
	// 0.5 s of audio is 44 frames: three parts of 15.
	// The speech server's section: every request that gave audio timed at
	// the client and by the engine; the client's first byte comes after
	// the engine committed it.
	if sv := r.Serve; sv == nil || sv.Requests == 0 || sv.Requests > 2 || sv.TTFB.P50 < sv.EngineTTFA.Min || sv.EngineTTFA.P50 <= 0 || len(sv.Formats) != 4 {
		t.Errorf("serve: %+v", r.Serve)
	} else {
		for _, f := range sv.Formats {
			if f.FirstAudioByte.N == 0 || f.FirstAudioByte.P50 <= 0 {
				t.Errorf("serve, %s: %+v", f.Format, f.FirstAudioByte)
			}
		}
	}
	if lf := r.LongForm; lf == nil || lf.Parts != 3 || lf.AudioSeconds != 3*15*512/44100.0 || lf.ContextFrames != 30 ||
		lf.BoundaryMaxMs <= 0 || lf.BoundaryP50Ms <= 0 || lf.HeapEndMB <= 0 || lf.DevEndGB <= 0 || lf.Underruns < 0 {
		t.Errorf("long-form: %+v", r.LongForm)
	}
	if len(phases) < 4 {
		t.Errorf("progress phases %v", phases)
	}
	var md bytes.Buffer
	r.Markdown(&md)
	for _, want := range []string{"decode step", "TTFA", "reference ÷ ours", "floor", "chunk 4", "| 3 |", "First utterance", "Where the rollouts' TTFA goes", "Plan: ", "Long-form reading"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if !strings.HasSuffix(r.FileName(), ".md") || strings.ContainsAny(r.FileName(), " /()") {
		t.Errorf("file name %q", r.FileName())
	}
}

// TestRunReduced: Options.Layers keeps the first layers of the backbone
// (attention where the model has it among them) and the report says so:
// the reduced count, no PyTorch ratios, its own file name; the plan line
// is there whatever the size.
func TestRunReduced(t *testing.T) {
	zc, dc := tinyConfigs(t)
	c, err := firstLayers(zc, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.Backbone.NLayer != 2 || len(c.Backbone.AttnLayerIdx) != 1 || c.Backbone.AttnLayerIdx[0] != 0 || zc.Backbone.NLayer != 5 {
		t.Fatalf("first 2 layers of %d (attention at %v): %d layers, attention at %v", zc.Backbone.NLayer, zc.Backbone.AttnLayerIdx, c.Backbone.NLayer, c.Backbone.AttnLayerIdx)
	}
	o := QuickOptions()
	o.Model, o.DAC, o.BandwidthMB = zc, &dc, 8
	b := cpu.New(0)
	r, err := Run(context.Background(), b, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Reduced() || r.Layers != 2 || r.ModelLayers != 5 || r.Plan != compute.PlanOf(b).String() || r.DecodeStep.N != o.DecodeSteps || len(r.Batches) != 0 {
		t.Errorf("report: layers %d of %d, plan %q, steps %d, batches %v", r.Layers, r.ModelLayers, r.Plan, r.DecodeStep.N, r.Batches)
	}
	var md bytes.Buffer
	r.Markdown(&md)
	for _, want := range []string{"reduced to 2 of its 5 layers", "not the model's speed", "Plan: "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, peer := range Peers {
		if strings.Contains(md.String(), peer.Range) {
			t.Errorf("a reduced backbone's report compares with the reference's %s", peer.Range)
		}
	}
	if !strings.Contains(r.FileName(), "-2of5-layers.md") {
		t.Errorf("file name %q", r.FileName())
	}
}

// tinyConfigs reads the configs of the golden tiny hybrid and DAC.
func tinyConfigs(t *testing.T) (*zonos.Config, dac.Config) {
	t.Helper()
	zc, err := zonos.LoadConfig(filepath.Join(golden.Pack(t, "zonos-hybrid-tiny"), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dac.LoadConfig(filepath.Join(golden.Pack(t, "dac-tiny"), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	return zc, dc
}
