package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/dac"
)

func init() {
	register("say", "speak text, streaming to the speakers and/or a WAV file", runSay)
}

type sayFlags struct {
	text, file, lang, out, format, device  string
	noPlay, playedOnly, listDevices        bool
	quiet, nullAudio, asJSON               bool
	play, speakerPath, speakerDir, prefix  string
	voiceName                              string
	seed                                   int64
	maxSeconds                             float64
	firstChunk, chunk                      int
	preRoll                                time.Duration
	partPhonemes, contextParts, trimFrames int
	anchor                                 bool
	maxContext                             float64
}

func runSay(args []string) int {
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: zonos say [flags] [text…]\n\nSpeaks text as it is generated. Text comes from the arguments, --text, --file, or standard input;\nstandard input is spoken sentence by sentence as it arrives (some-program | zonos say).\nA long text is spoken in parts, each continuing the voice of the audio before it.")
		fs.PrintDefaults()
	}
	var f sayFlags
	fs.StringVar(&f.text, "text", "", "text to speak")
	fs.StringVar(&f.file, "file", "", "read the text from a file (- for standard input)")
	fs.StringVar(&f.lang, "lang", "en-us", "espeak language code")
	fs.StringVar(&f.out, "out", "", "also write the audio to this WAV file (- for standard output)")
	fs.StringVar(&f.format, "format", "pcm16", "WAV sample format: pcm16 or float32")
	fs.BoolVar(&f.playedOnly, "played-only", false, "on cancel, keep in the WAV only what was actually played")
	fs.StringVar(&f.play, "play", "auto", "play through the output device: true, false, or auto (when a terminal and a device exist)")
	fs.BoolVar(&f.noPlay, "no-play", false, "same as --play=false")
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on standard output")
	fs.StringVar(&f.device, "device", "", "output device (ID, name or part of a name; see --list-devices)")
	fs.BoolVar(&f.listDevices, "list-devices", false, "list output devices and exit")
	fs.BoolVar(&f.nullAudio, "null-audio", false, "play into a silent null device (measure first-sound without a sound card)")
	fs.DurationVar(&f.preRoll, "pre-roll", 0, "audio buffered before playback starts (default 50ms)")
	fs.Int64Var(&f.seed, "seed", -1, "sampling seed (default: random)")
	fs.Float64Var(&f.maxSeconds, "max-seconds", 30, "longest audio of one part of the text, seconds")
	fs.IntVar(&f.partPhonemes, "part-phonemes", engine.DefaultPhonemeBudget, "size of a part of a long text, in phonemes (whole sentences packed up to it)")
	fs.IntVar(&f.contextParts, "context-parts", 1, "parts of a long text each part continues from (0: none, every part starts afresh)")
	fs.BoolVar(&f.anchor, "anchor", true, "keep the first part in every later part's context, so the voice holds")
	fs.IntVar(&f.trimFrames, "trim-frames", 3, "frames dropped from the end of a part that another follows (0: none)")
	fs.Float64Var(&f.maxContext, "max-context-seconds", 20, "most audio a part continues from, seconds (0: the default)")
	fs.IntVar(&f.firstChunk, "first-chunk", dac.DefaultStreamConfig.FirstChunk, "frames committed in the vocoder's first chunk (time to first audio)")
	fs.IntVar(&f.chunk, "chunk", dac.DefaultStreamConfig.Chunk, "frames per later vocoder chunk (throughput)")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing but errors")
	fs.StringVar(&f.speakerPath, "speaker", "", "voice to clone: a clip (WAV, FLAC, MP3, Ogg) or a vector from 'zonos embed -o'")
	fs.StringVar(&f.voiceName, "voice", "", "a voice saved in the library by 'zonos voice add' (see 'zonos voice list'), by name")
	fs.StringVar(&f.speakerDir, "speaker-dir", "", "folder with the speaker model's two .pt files (default: the model cache)")
	fs.StringVar(&f.prefix, "prefix", "", "audio clip the speech continues from (encoded with the DAC)")
	mf := addModelFlags(fs)
	kf := addKnobFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if f.listDevices {
		return listDevices(f.nullAudio)
	}
	text, stdin, err := sayText(f, fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 2
	}
	knobs, err := kf.knobs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 2
	}
	format, err := audio.ParseWAVFormat(f.format)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 2
	}
	switch f.play {
	case "auto":
		// Play when a person is at a terminal; a pipe or a script gets a
		// file only (and must name one).
		f.noPlay = f.noPlay || (!isTerminal(os.Stderr) && f.out != "")
	case "true", "false":
		f.noPlay = f.noPlay || f.play == "false"
	default:
		fmt.Fprintf(os.Stderr, "zonos say: --play %q: want true, false or auto\n", f.play)
		return 2
	}
	if f.noPlay && f.out == "" {
		fmt.Fprintln(os.Stderr, "zonos say: not playing and no --out: the audio would go nowhere")
		return 2
	}
	if f.out == "-" && f.asJSON {
		fmt.Fprintln(os.Stderr, "zonos say: --out - and --json both want standard output")
		return 2
	}
	seed := uint64(f.seed)
	if f.seed < 0 {
		seed = uint64(time.Now().UnixNano())
	}
	req := engine.Request{Text: text, Language: f.lang, Knobs: knobs, Seed: seed, MaxSeconds: f.maxSeconds,
		FirstChunk: f.firstChunk, Chunk: f.chunk, PhonemeBudget: f.partPhonemes, LongForm: f.longForm(),
		DiscardCodes: true}
	if stdin != nil {
		req.Feed = engine.NewTextFeed()
	}
	logf := func(format string, a ...any) {
		if !f.quiet {
			fmt.Fprintf(os.Stderr, format+"\n", a...)
		}
	}

	// The inputs are checked before the model loads, which takes seconds
	// to minutes: a typo is reported at once.
	if err := req.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 2
	}
	var v *voice
	switch {
	case f.speakerPath != "" && f.voiceName != "":
		fmt.Fprintln(os.Stderr, "zonos say: --speaker and --voice both choose the voice: give one of them")
		return 2
	case f.speakerPath != "":
		if v, err = readVoice(f.speakerPath, f.speakerDir, logf); err != nil {
			fmt.Fprintln(os.Stderr, "zonos say: speaker:", err)
			return 1
		}
	case f.voiceName != "":
		if v, err = libraryVoice(f.voiceName, logf); err != nil {
			fmt.Fprintln(os.Stderr, "zonos say: voice:", err)
			return 1
		}
	}
	var prefix *audio.Clip
	if f.prefix != "" {
		if prefix, err = readPrefix(f.prefix, logf); err != nil {
			fmt.Fprintln(os.Stderr, "zonos say: prefix:", err)
			return 1
		}
	}

	e, err := mf.load(f.quiet)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		var nw *noWeightsError
		if errors.As(err, &nw) {
			return 2
		}
		return 1
	}
	defer e.Backend().Close()
	sig := catchStopSignals()
	defer sig.stop()
	if v != nil {
		if req.Speaker, err = v.embed(sig.ctx, e.Backend(), logf); err != nil {
			fmt.Fprintln(os.Stderr, "zonos say: speaker:", err)
			if c := sig.exitCode(); c != 0 {
				return c
			}
			return 1
		}
	}
	if prefix != nil {
		if req.AudioPrefix, err = prefixCodes(e, prefix); err != nil {
			fmt.Fprintln(os.Stderr, "zonos say: prefix:", err)
			return 1
		}
	}
	if stdin != nil {
		go feedText(req.Feed, stdin, logf)
	}
	code := speak(sig.ctx, e, req, f, format)
	if c := sig.exitCode(); c != 0 && code == 130 {
		return c // 143 after SIGTERM; the WAV was finalized all the same
	}
	return code
}

// sayText picks the text from the arguments, --text or --file, or says
// to read it from standard input as it arrives (stdin set).
func sayText(f sayFlags, args []string) (text string, stdin io.Reader, err error) {
	sources := 0
	for _, s := range []bool{f.text != "", f.file != "", len(args) > 0} {
		if s {
			sources++
		}
	}
	if sources > 1 {
		return "", nil, fmt.Errorf("give the text one way: arguments, --text or --file")
	}
	switch {
	case f.text != "":
		return f.text, nil, nil
	case len(args) > 0:
		return strings.Join(args, " "), nil, nil
	case f.file == "-" || f.file == "" && !isTerminal(os.Stdin):
		return "", sayStdin, nil
	case f.file != "":
		fh, err := os.Open(f.file)
		if err != nil {
			return "", nil, err
		}
		defer fh.Close()
		data, err := io.ReadAll(io.LimitReader(fh, engine.MaxTextBytes+1))
		if err != nil {
			return "", nil, err
		}
		if len(data) > engine.MaxTextBytes {
			return "", nil, fmt.Errorf("%s is over %d MiB, the longest text one reading takes; split it", f.file, engine.MaxTextBytes>>20)
		}
		return string(data), nil, nil
	}
	return "", nil, fmt.Errorf("no text: pass it as arguments, --text, --file or on standard input")
}

// sayStdin is where say reads text that arrives while it is spoken (a
// seam: tests feed a pipe).
var sayStdin io.Reader = os.Stdin

// feedText copies r into the feed as it arrives, so each sentence is
// spoken once it is complete rather than at the end of the input, and
// ends the text at EOF. A read error ends it too, after what was read.
func feedText(feed *engine.TextFeed, r io.Reader, logf func(string, ...any)) {
	defer feed.End()
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if ferr := feed.Append(string(buf[:n])); ferr != nil {
				return // the utterance ends with this error
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			logf("reading standard input: %v; speaking what was read", err)
			return
		}
	}
}

// longForm is the long-form options the flags give.
func (f sayFlags) longForm() engine.LongForm {
	return engine.LongFormOf(f.contextParts, f.anchor, f.trimFrames, f.maxContext)
}

func listDevices(null bool) int {
	devs, err := audio.ListDevices(null)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 1
	}
	for _, d := range devs {
		def := ""
		if d.Default {
			def = " (default)"
		}
		fmt.Printf("%s\t%s%s\n", d.ID, d.Name, def)
	}
	return 0
}

// outputDevice is what speak needs of an audio.Player.
type outputDevice interface {
	BeginUtterance() *audio.Utterance
	WriteAll(ctx context.Context, samples []float32) error
	EndUtterance()
	Cancel()
	Close() error
}

// openPlayer opens the output device (a seam: fault tests wrap the player).
var openPlayer = func(cfg audio.PlayerConfig) (outputDevice, error) {
	p, err := audio.NewPlayer(cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// speak runs one request to the player and the WAV writer. Playback
// trouble never stops generation: the WAV keeps everything.
func speak(ctx context.Context, e *engine.Engine, req engine.Request, f sayFlags, format audio.WAVFormat) int {
	logf := func(format string, a ...any) {
		if !f.quiet {
			fmt.Fprintf(os.Stderr, format+"\n", a...)
		}
	}
	var wav *audio.WAVWriter
	var err error
	if f.out == "-" {
		wav, err = audio.NewWAVWriter(os.Stdout, engine.SampleRate, format)
	} else if f.out != "" {
		wav, err = audio.CreateWAV(f.out, engine.SampleRate, format)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 1
	}
	var player outputDevice
	var utt *audio.Utterance
	if !f.noPlay {
		player, err = openPlayer(audio.PlayerConfig{Device: f.device, Null: f.nullAudio, PreRoll: f.preRoll, Buffer: 5 * time.Minute})
		if err != nil {
			if wav == nil {
				fmt.Fprintln(os.Stderr, "zonos say:", err)
				return 1
			}
			logf("playback unavailable (%v); writing %s only", err, f.out)
		} else {
			defer player.Close()
			utt = player.BeginUtterance()
		}
	}
	start := time.Now()
	s, err := e.Synthesize(ctx, req)
	if err != nil {
		if wav != nil {
			wav.Abort()
		}
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 2
	}
	var final engine.Event
	var wavErr error
	meter := newLiveMeter(!f.quiet && isTerminal(os.Stderr))
	for ev := range s.Events() {
		meter.show(ev, utt)
		switch ev.Kind {
		case engine.Audio:
			if wav != nil && wavErr == nil {
				if wavErr = wav.Write(ev.PCM); wavErr != nil {
					logf("writing %s failed: %v (keeping what was written)", f.out, wavErr)
				}
			}
			if player != nil {
				if err := player.WriteAll(ctx, ev.PCM); err != nil && !errors.Is(err, context.Canceled) {
					logf("playback stopped: %v; generation continues", err)
					player.Close()
					player = nil
				}
			}
		case engine.Notice:
			meter.clear()
			logf("note: %s", ev.Message)
		case engine.Done, engine.Failed:
			final = ev
		}
	}
	cancelled := final.Kind == engine.Failed && errors.Is(final.Err, context.Canceled)
	if player != nil {
		if cancelled {
			player.Cancel()
		} else {
			player.EndUtterance()
			if err := utt.Wait(context.Background()); err != nil {
				logf("playback stopped: %v; %s keeps everything", err, f.out)
			}
		}
	}
	if wav != nil {
		if cancelled && f.playedOnly && utt != nil {
			wav.Truncate(utt.Played())
		}
		if err := wav.Close(); err != nil && wavErr == nil {
			wavErr = err
		}
	}
	meter.clear()
	m := final.Metrics
	sum := summary{TTFAms: ms(m.TTFA), PrefillMs: ms(m.Prefill), FirstFrameMs: ms(m.FirstFrame), AudioSeconds: m.AudioSeconds,
		ElapsedSeconds: m.Elapsed.Seconds(), RTF: m.RTF, FrameP50ms: ms(m.FrameLatencyP50), FrameP90ms: ms(m.FrameLatencyP90),
		BudgetMs: ms(engine.FrameBudget), StepP50ms: ms(m.StepP50), StepP90ms: ms(m.StepP90), Frames: m.Frames,
		Backend: e.Backend().Device(), Seed: req.Seed, Out: f.out, Cancelled: cancelled,
		Parts: m.Parts, BoundaryP50ms: ms(m.BoundaryP50), BoundaryMaxms: ms(m.BoundaryMax)}
	if utt != nil {
		sum.Underruns = utt.Underruns()
		if t, ok := utt.FirstSound(); ok {
			sum.FirstSoundMs = ms(t.Sub(start))
		}
	}
	if final.Kind == engine.Failed && !cancelled {
		sum.Error = final.Err.Error()
	}
	if f.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(sum)
	}
	if !f.quiet {
		fs := "—"
		if sum.FirstSoundMs > 0 {
			fs = fmt.Sprintf("%.0f ms", sum.FirstSoundMs)
		}
		logf("TTFA %.0f ms · first sound %s · %.2f s audio in %.2f s (RTF %.2f×) · frame p50/p90 %.2f/%.2f ms (budget %.2f) · step p50 %.1f ms",
			ms(m.TTFA), fs, m.AudioSeconds, m.Elapsed.Seconds(), m.RTF, ms(m.FrameLatencyP50), ms(m.FrameLatencyP90), ms(engine.FrameBudget), ms(m.StepP50))
		if m.Parts > 1 {
			logf("%d parts · boundary p50/max %.1f/%.1f ms (generation runs ahead of playback)", m.Parts, ms(m.BoundaryP50), ms(m.BoundaryMax))
		}
		if utt != nil && utt.Underruns() > 0 {
			logf("playback underruns: %d", utt.Underruns())
		}
		if wav != nil && f.out != "-" {
			logf("wrote %s (%.2f s)", f.out, float64(wav.Samples())/engine.SampleRate)
		}
	}
	switch {
	case cancelled:
		logf("cancelled")
		return 130
	case final.Kind == engine.Failed:
		fmt.Fprintln(os.Stderr, "zonos say:", final.Err)
		return 1
	case wavErr != nil:
		fmt.Fprintln(os.Stderr, "zonos say:", wavErr)
		return 1
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// summary is the end-of-utterance report (--json).
type summary struct {
	TTFAms         float64 `json:"ttfa_ms"`
	FirstSoundMs   float64 `json:"first_sound_ms,omitempty"`
	PrefillMs      float64 `json:"prefill_ms"`
	FirstFrameMs   float64 `json:"first_frame_ms"`
	Frames         int     `json:"frames"`
	AudioSeconds   float64 `json:"audio_seconds"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	RTF            float64 `json:"rtf"`
	FrameP50ms     float64 `json:"frame_latency_p50_ms"`
	FrameP90ms     float64 `json:"frame_latency_p90_ms"`
	BudgetMs       float64 `json:"frame_budget_ms"`
	StepP50ms      float64 `json:"step_p50_ms"`
	StepP90ms      float64 `json:"step_p90_ms"`
	Underruns      int64   `json:"underruns"`
	Parts          int     `json:"parts"`
	BoundaryP50ms  float64 `json:"boundary_p50_ms,omitempty"`
	BoundaryMaxms  float64 `json:"boundary_max_ms,omitempty"`
	Backend        string  `json:"backend"`
	Seed           uint64  `json:"seed"`
	Out            string  `json:"out,omitempty"`
	Cancelled      bool    `json:"cancelled"`
	Error          string  `json:"error,omitempty"`
}

// liveMeter redraws one status line on a terminal while speaking.
type liveMeter struct {
	on    bool
	last  time.Time
	drawn bool
}

func newLiveMeter(on bool) *liveMeter { return &liveMeter{on: on} }

func (l *liveMeter) show(ev engine.Event, u *audio.Utterance) {
	if !l.on || (time.Since(l.last) < 100*time.Millisecond && ev.Kind != engine.Done) {
		return
	}
	l.last = time.Now()
	m := ev.Metrics
	under := int64(0)
	if u != nil {
		under = u.Underruns()
	}
	fmt.Fprintf(os.Stderr, "\r\x1b[K%5.2f s audio · TTFA %.0f ms · frame p50/p90 %.1f/%.1f ms (budget %.2f) · RTF %.2f× · underruns %d",
		m.AudioSeconds, ms(m.TTFA), ms(m.FrameLatencyP50), ms(m.FrameLatencyP90), ms(engine.FrameBudget), m.RTF, under)
	l.drawn = true
}

func (l *liveMeter) clear() {
	if l.drawn {
		fmt.Fprint(os.Stderr, "\r\x1b[K")
		l.drawn = false
	}
}
