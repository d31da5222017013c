package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"zonostream/audio"
	"zonostream/engine"
)

func init() {
	register("say", "speak text, streaming to the speakers and/or a WAV file", runSay)
}

type sayFlags struct {
	text, file, lang, out, format, device string
	noPlay, playedOnly, listDevices       bool
	quiet, nullAudio                      bool
	seed                                  int64
	maxSeconds                            float64
	firstChunk, chunk                     int
	preRoll                               time.Duration
}

func runSay(args []string) int {
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: zonos say [flags] [text…]\n\nSpeaks text as it is generated. Text comes from the arguments, --text, or --file (- for stdin).")
		fs.PrintDefaults()
	}
	var f sayFlags
	fs.StringVar(&f.text, "text", "", "text to speak")
	fs.StringVar(&f.file, "file", "", "read the text from a file (- for standard input)")
	fs.StringVar(&f.lang, "lang", "en-us", "espeak language code")
	fs.StringVar(&f.out, "out", "", "also write the audio to this WAV file (- for standard output)")
	fs.StringVar(&f.format, "format", "pcm16", "WAV sample format: pcm16 or float32")
	fs.BoolVar(&f.playedOnly, "played-only", false, "on cancel, keep in the WAV only what was actually played")
	fs.BoolVar(&f.noPlay, "no-play", false, "do not play; only write --out")
	fs.StringVar(&f.device, "device", "", "output device (ID, name or part of a name; see --list-devices)")
	fs.BoolVar(&f.listDevices, "list-devices", false, "list output devices and exit")
	fs.BoolVar(&f.nullAudio, "null-audio", false, "play into a silent null device (measure first-sound without a sound card)")
	fs.DurationVar(&f.preRoll, "pre-roll", 0, "audio buffered before playback starts (default 50ms)")
	fs.Int64Var(&f.seed, "seed", -1, "sampling seed (default: random)")
	fs.Float64Var(&f.maxSeconds, "max-seconds", 30, "longest audio per sentence group, seconds")
	fs.IntVar(&f.firstChunk, "first-chunk", 4, "frames committed in the vocoder's first chunk (time to first audio)")
	fs.IntVar(&f.chunk, "chunk", 16, "frames per later vocoder chunk (throughput)")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing but errors")
	mf := addModelFlags(fs)
	kf := addKnobFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if f.listDevices {
		return listDevices(f.nullAudio)
	}
	text, err := sayText(f, fs.Args())
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
	if f.noPlay && f.out == "" {
		fmt.Fprintln(os.Stderr, "zonos say: --no-play needs --out (otherwise the audio goes nowhere)")
		return 2
	}
	seed := uint64(f.seed)
	if f.seed < 0 {
		seed = uint64(time.Now().UnixNano())
	}
	req := engine.Request{Text: text, Language: f.lang, Knobs: knobs, Seed: seed, MaxSeconds: f.maxSeconds,
		FirstChunk: f.firstChunk, Chunk: f.chunk}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e, err := mf.load(f.quiet)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos say:", err)
		return 1
	}
	defer e.Backend().Close()
	code := speak(ctx, e, req, f, format)
	return code
}

// sayText picks the text from the arguments, --text or --file.
func sayText(f sayFlags, args []string) (string, error) {
	sources := 0
	for _, s := range []bool{f.text != "", f.file != "", len(args) > 0} {
		if s {
			sources++
		}
	}
	if sources > 1 {
		return "", fmt.Errorf("give the text one way: arguments, --text or --file")
	}
	switch {
	case f.text != "":
		return f.text, nil
	case len(args) > 0:
		return strings.Join(args, " "), nil
	case f.file != "":
		var r io.Reader = os.Stdin
		if f.file != "-" {
			fh, err := os.Open(f.file)
			if err != nil {
				return "", err
			}
			defer fh.Close()
			r = fh
		}
		data, err := io.ReadAll(io.LimitReader(r, engine.MaxTextBytes+1))
		if err != nil {
			return "", err
		}
		if len(data) > engine.MaxTextBytes {
			return "", fmt.Errorf("text file exceeds %d bytes; split it", engine.MaxTextBytes)
		}
		return string(data), nil
	}
	return "", fmt.Errorf("no text: pass it as arguments, --text or --file")
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
	var player *audio.Player
	var utt *audio.Utterance
	if !f.noPlay {
		player, err = audio.NewPlayer(audio.PlayerConfig{Device: f.device, Null: f.nullAudio, PreRoll: f.preRoll, Buffer: 5 * time.Minute})
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
	for ev := range s.Events() {
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
			utt.Wait(context.Background())
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
	m := final.Metrics
	if !f.quiet {
		fs := "—"
		if utt != nil {
			if t, ok := utt.FirstSound(); ok {
				fs = fmt.Sprintf("%.0f ms", ms(t.Sub(start)))
			}
		}
		logf("TTFA %.0f ms · first sound %s · %.2f s audio in %.2f s (RTF %.2f×) · frame p50/p90 %.2f/%.2f ms (budget %.2f) · step p50 %.1f ms",
			ms(m.TTFA), fs, m.AudioSeconds, m.Elapsed.Seconds(), m.RTF, ms(m.FrameLatencyP50), ms(m.FrameLatencyP90), ms(engine.FrameBudget), ms(m.StepP50))
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
