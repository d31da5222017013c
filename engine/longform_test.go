package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"zonostream/engine/text"
	"zonostream/engine/zonos"
)

// generated is what one part was generated from, as the model saw it.
type generated struct {
	prefix [][zonos.NumCodebooks]int32
	ids    []int32
	trim   int
}

// watchGenerate wraps e's Generate to record every part's prompt, and
// the frames it asked to trim at EOS.
func watchGenerate(e *Engine) *[]generated {
	var mu sync.Mutex
	var got []generated
	inner := e.generate
	e.generate = func(ctx context.Context, in zonos.Inputs, o zonos.GenerateOptions, f func(zonos.Frame) error) (*zonos.Result, error) {
		g := generated{prefix: append([][zonos.NumCodebooks]int32(nil), o.AudioPrefix...), ids: in.PhonemeIDs, trim: -1}
		tt := o.TailTrim
		o.TailTrim = func() int { g.trim = tt(); return g.trim }
		res, err := inner(ctx, in, o, f)
		mu.Lock()
		got = append(got, g)
		mu.Unlock()
		return res, err
	}
	return &got
}

// partRun is one long-form stream's events, grouped by part.
type partRun struct {
	parts  []Part
	codes  [][][zonos.NumCodebooks]int32 // spoken frames of each part
	pcm    []float32
	final  Event
	frames int
}

func drainParts(s *Stream) partRun {
	var r partRun
	for ev := range s.Events() {
		switch ev.Kind {
		case PartStart:
			r.parts = append(r.parts, ev.Part)
			r.codes = append(r.codes, nil)
		case FrameDone:
			if len(r.codes) == 0 { // a part whose start was read before
				r.codes = append(r.codes, nil)
			}
			r.codes[len(r.codes)-1] = append(r.codes[len(r.codes)-1], ev.Codes)
			r.frames++
		case Audio:
			r.pcm = append(r.pcm, ev.PCM...)
		case Done, Failed:
			r.final = ev
		}
	}
	return r
}

const fourSentences = "One sets the voice. Two follows it. Three is next. Four ends it."

// longRequest speaks fourSentences one sentence a part, briefly each.
func longRequest() Request {
	r := shortRequest()
	r.Text = fourSentences
	r.PhonemeBudget = 30 // each sentence alone (15–21 phonemes): two cost more
	r.MaxSeconds = 0.15
	return r
}

// TestLongFormContinues: every part after the first is generated from
// exactly the codes spoken before it (the first part, then the part just
// before) and their phonemes before its own; the stream's audio equals
// one-shot vocoding of all spoken codes, across every boundary; parts
// tile the text and say where their audio starts.
func TestLongFormContinues(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	seen := watchGenerate(e)
	req := longRequest()
	s, err := e.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := drainParts(s)
	if got.final.Kind != Done {
		t.Fatalf("ended with %v: %v", got.final.Kind, got.final.Err)
	}
	if len(got.parts) != 4 || len(*seen) != 4 {
		t.Fatalf("%d parts started, %d generated; want 4 (one a sentence)", len(got.parts), len(*seen))
	}
	var all [][zonos.NumCodebooks]int32
	phonemes := make([]string, len(got.parts))
	end := 0
	for i, p := range got.parts {
		if p.Index != i || p.Start != end || req.Text[p.Start:p.End] != p.Text {
			t.Errorf("part %d: %+v does not follow the text on from byte %d", i, p, end)
		}
		end = p.End
		if p.FirstFrame != len(all) || p.FirstSample != int64(len(all))*512 {
			t.Errorf("part %d starts at frame %d, sample %d; %d frames were spoken before it", i, p.FirstFrame, p.FirstSample, len(all))
		}
		_, ph, err := text.Prepare(p.Text, req.Language)
		if err != nil {
			t.Fatal(err)
		}
		phonemes[i] = ph
		g := (*seen)[i]
		var want [][zonos.NumCodebooks]int32
		var wantPh []string
		switch i {
		case 0:
		case 1:
			want, wantPh = got.codes[0], []string{phonemes[0]}
		default:
			want = append(append(want, got.codes[0]...), got.codes[i-1]...)
			wantPh = []string{phonemes[0], phonemes[i-1]}
		}
		if !slices.Equal(g.prefix, want) {
			t.Errorf("part %d: generated from a prefix of %d frames, not the %d frames spoken in parts 0 and %d", i, len(g.prefix), len(want), i-1)
		}
		if p.ContextFrames != len(want) {
			t.Errorf("part %d: reports %d context frames, want %d", i, p.ContextFrames, len(want))
		}
		wantIDs := text.Tokenize(strings.Join(append(wantPh, ph), " "))
		if i == 0 {
			wantIDs, _, _ = text.Prepare(p.Text, req.Language)
		}
		if !slices.Equal(g.ids, wantIDs) {
			t.Errorf("part %d: conditioned on %d phoneme ids, want the %d of its context's and its own phonemes", i, len(g.ids), len(wantIDs))
		}
		all = append(all, got.codes[i]...)
	}
	if strings.TrimSpace(req.Text[end:]) != "" {
		t.Errorf("the parts end at byte %d of %d", end, len(req.Text))
	}
	if !slices.Equal(s.Codes(), all) {
		t.Fatalf("Codes() holds %d frames, the FrameDone events %d", len(s.Codes()), len(all))
	}
	matchesOneShot(t, e.Codec(), all, got.pcm)
	m := got.final.Metrics
	if m.Parts != 4 || m.BoundaryMax <= 0 || m.BoundaryP50 <= 0 || m.BoundaryP50 > m.BoundaryMax {
		t.Errorf("metrics: %d parts, boundary p50 %v max %v", m.Parts, m.BoundaryP50, m.BoundaryMax)
	}
}

// TestLongFormTrimsOnlyBeforeAnotherPart: a part that another follows is
// told to drop the configured tail at EOS; the last part keeps all of its
// frames.
func TestLongFormTrimsOnlyBeforeAnotherPart(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	// The tiny model's random weights rarely draw EOS: this wrapper asks
	// TailTrim once its part ends, as the loop would at EOS.
	e.generate = func(ctx context.Context, in zonos.Inputs, o zonos.GenerateOptions, f func(zonos.Frame) error) (*zonos.Result, error) {
		res, err := e.model.Generate(ctx, in, o, f)
		o.TailTrim()
		return res, err
	}
	seen := watchGenerate(e)
	req := longRequest()
	req.LongForm.TrimFrames = 5
	drainParts(mustSynthesize(t, e, req))
	for i, g := range *seen {
		want := 5
		if i == len(*seen)-1 {
			want = 0
		}
		if g.trim != want {
			t.Errorf("part %d of %d: trims %d frames, want %d", i, len(*seen), g.trim, want)
		}
	}
}

// TestLongFormOptions: no context makes every part start afresh; no
// anchor leaves the first part out; the context never exceeds its bound.
func TestLongFormOptions(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	for _, c := range []struct {
		name string
		lf   LongForm
		want func(i int, codes [][][zonos.NumCodebooks]int32) [][zonos.NumCodebooks]int32
	}{
		{"afresh", LongForm{ContextParts: -1}, func(int, [][][zonos.NumCodebooks]int32) [][zonos.NumCodebooks]int32 { return nil }},
		{"no anchor", LongForm{NoAnchor: true}, func(i int, c [][][zonos.NumCodebooks]int32) [][zonos.NumCodebooks]int32 { return c[i-1] }},
		{"two parts", LongForm{ContextParts: 2, NoAnchor: true}, func(i int, c [][][zonos.NumCodebooks]int32) [][zonos.NumCodebooks]int32 {
			if i == 1 {
				return c[0]
			}
			return append(append([][zonos.NumCodebooks]int32(nil), c[i-2]...), c[i-1]...)
		}},
		{"bounded", LongForm{MaxContextSeconds: 0.2}, func(i int, c [][][zonos.NumCodebooks]int32) [][zonos.NumCodebooks]int32 {
			return c[i-1] // 0.15 s a part: the anchor and the previous part are over 0.2 s
		}},
	} {
		seen := watchGenerate(e)
		req := longRequest()
		req.LongForm = c.lf
		got := drainParts(mustSynthesize(t, e, req))
		if got.final.Kind != Done {
			t.Fatalf("%s: %v", c.name, got.final.Err)
		}
		for i := 1; i < len(*seen); i++ {
			if want := c.want(i, got.codes); !slices.Equal((*seen)[i].prefix, want) {
				t.Errorf("%s: part %d continues from %d frames, want %d", c.name, i, len((*seen)[i].prefix), len(want))
			}
		}
		e.generate = e.model.Generate
	}
	for _, lf := range []LongForm{{ContextParts: 9}, {TrimFrames: zonos.MaxTailTrim + 1}, {MaxContextSeconds: 31}, {MaxContextSeconds: -1}} {
		req := longRequest()
		req.LongForm = lf
		if _, err := e.Synthesize(context.Background(), req); err == nil {
			t.Errorf("long-form options %+v accepted", lf)
		}
	}
}

// TestSpokenContextBounded: however many parts are spoken, the context
// holds the anchor and the last ContextParts, nothing more.
func TestSpokenContextBounded(t *testing.T) {
	lf := LongForm{ContextParts: 2}
	if err := lf.normalise(); err != nil {
		t.Fatal(err)
	}
	c := spokenContext{cfg: lf}
	for i := range 1000 {
		c.add(spokenPart{index: i, phonemes: "a", codes: make([][zonos.NumCodebooks]int32, 10)})
		if len(c.recent) > 2 || c.anchor == nil || c.anchor.index != 0 {
			t.Fatalf("after %d parts: %d recent, anchor %v", i+1, len(c.recent), c.anchor)
		}
	}
	if cap(c.recent) > 4 {
		t.Errorf("recent parts' backing array grew to %d", cap(c.recent))
	}
	prefix, _, used := c.prompt(piece{ids: []int32{1, 5, 2}, phonemes: "b"})
	if len(used) != 3 || used[0] != 0 || used[1] != 998 || used[2] != 999 || len(prefix) != 30 {
		t.Errorf("prompt uses parts %v (%d frames), want [0 998 999] (30)", used, len(prefix))
	}
}

// TestDiscardCodes: a stream told not to keep its frames still speaks
// them all and hands each one out once.
func TestDiscardCodes(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	req := longRequest()
	req.DiscardCodes = true
	s := mustSynthesize(t, e, req)
	got := drainParts(s)
	if got.final.Kind != Done || s.Codes() != nil {
		t.Fatalf("ended %v (%v), Codes() holds %d frames", got.final.Kind, got.final.Err, len(s.Codes()))
	}
	if len(got.pcm) != got.frames*512 {
		t.Errorf("%d samples for %d frames", len(got.pcm), got.frames)
	}
}

// TestLongFormCancelAtBoundary: cancelling as a part begins ends the
// stream with Canceled, keeps the audio already committed, and leaves the
// engine ready for the next utterance.
func TestLongFormCancelAtBoundary(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	s := mustSynthesize(t, e, longRequest())
	var pcm int
	var final Event
	for ev := range s.Events() {
		switch ev.Kind {
		case PartStart:
			if ev.Part.Index == 2 {
				s.Cancel()
			}
		case Audio:
			pcm += len(ev.PCM)
		case Done, Failed:
			final = ev
		}
	}
	if final.Kind != Failed || !errors.Is(final.Err, context.Canceled) || pcm == 0 {
		t.Fatalf("ended %v (%v) after %d samples; want Canceled after some audio", final.Kind, final.Err, pcm)
	}
	if got := drain(mustSynthesize(t, e, shortRequest())); got.final.Kind != Done {
		t.Fatalf("next utterance: %v", got.final.Err)
	}
}

// TestLongFormFailureKeepsAudio: a part failing in the middle ends the
// stream with its error after every frame generated before it is
// committed.
func TestLongFormFailureKeepsAudio(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	boom := errors.New("decode failed")
	part := 0
	e.generate = func(ctx context.Context, in zonos.Inputs, o zonos.GenerateOptions, f func(zonos.Frame) error) (*zonos.Result, error) {
		part++
		n := 0
		return e.model.Generate(ctx, in, o, func(fr zonos.Frame) error {
			if n++; part == 2 && n > 5 {
				return boom
			}
			return f(fr)
		})
	}
	got := drainParts(mustSynthesize(t, e, longRequest()))
	if got.final.Kind != Failed || !errors.Is(got.final.Err, boom) {
		t.Fatalf("ended %v (%v), want the part's error", got.final.Kind, got.final.Err)
	}
	if len(got.parts) != 2 || len(got.pcm) != got.frames*512 {
		t.Fatalf("%d parts, %d samples for %d frames: generated audio was lost", len(got.parts), len(got.pcm), got.frames)
	}
}
