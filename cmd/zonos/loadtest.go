package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"zonostream/internal/loadtest"
)

func init() {
	register("loadtest", "load a running speech server with concurrent streams: TTFA, starving, real-time factor", runLoadtest)
}

// defaultStreamsMax bounds --find when --streams-max is not given.
const defaultStreamsMax = 256

func runLoadtest(args []string) int {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: zonos loadtest [flags]

Opens concurrent streams against a running speech server (zonos serve):
POST /v1/tts with format pcm, or the WebSocket /v1/tts/stream with --ws,
each with its own seed (--seed + i) and the same text. Each stream is
played by a simulated real-time player that starts --pre-roll after its
first audio byte; a stream starves when playback catches up with what has
arrived. Reports, per number of streams: the time to first audio at the
client and the engine's (p50, p99), the streams that starved and for how
long, the aggregate real-time factor (audio received / wall time), the
refusals by status (503, 429: counted, not fatal), and the server's queue
and device memory peaks from /metrics.

--find searches for the most streams that all play without starving
(doubling, then bisecting, up to --streams-max). --verify fetches each
stream again alone afterwards and compares the PCM byte for byte.

The streams come from one client: start the server with
--max-streams-per-key and --max-queue above the streams tried, or the
extra ones are refused (429, 503).

flags:
`)
		fs.PrintDefaults()
	}
	url := fs.String("url", loadtest.DefaultURL, "the speech server's base URL")
	keyFile := fs.String("api-key-file", "", "file whose first line is the API key, sent as Authorization: Bearer (a file keeps it out of the process list)")

	ws := fs.Bool("ws", false, "stream over the WebSocket /v1/tts/stream instead of POST /v1/tts")
	streams := fs.Int("streams", 8, "concurrent streams of one run")
	find := fs.Bool("find", false, "search for the most concurrent streams with none starving")
	streamsMax := fs.Int("streams-max", 0, fmt.Sprintf("the most streams the search tries (implies --find; default %d)", defaultStreamsMax))
	text := fs.String("text", loadtest.DefaultText, "what every stream speaks")
	seed := fs.Uint64("seed", 1, "seed of the first stream; stream i has seed+i")
	maxSeconds := fs.Float64("max-seconds", 0, "longest audio of one part of the text, seconds (0: the server's limit)")
	preRoll := fs.Duration("pre-roll", loadtest.DefaultPreRoll, "audio the simulated player buffers before it plays")
	verify := fs.Bool("verify", false, "fetch each stream again alone afterwards and compare its PCM byte for byte")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "zonos loadtest: unexpected arguments %q\n", fs.Args())
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	searching := *find || set["streams-max"]
	switch {
	case searching && set["streams"]:
		fmt.Fprintln(os.Stderr, "zonos loadtest: give --streams for one run or --find/--streams-max for a search, not both")
		return 2
	case !searching && *streams < 1:
		fmt.Fprintf(os.Stderr, "zonos loadtest: --streams %d: want at least 1\n", *streams)
		return 2
	case set["streams-max"] && *streamsMax < 1:
		fmt.Fprintf(os.Stderr, "zonos loadtest: --streams-max %d: want at least 1\n", *streamsMax)
		return 2
	case *maxSeconds < 0 || *preRoll < 0:
		fmt.Fprintln(os.Stderr, "zonos loadtest: --max-seconds and --pre-roll must be ≥ 0")
		return 2
	case strings.TrimSpace(*text) == "":
		fmt.Fprintln(os.Stderr, "zonos loadtest: --text is empty")
		return 2
	}
	key, err := readAPIKey(*keyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos loadtest:", err)
		return 2
	}
	if *streamsMax == 0 {
		*streamsMax = defaultStreamsMax
	}
	o := loadtest.Options{URL: *url, APIKey: key, WebSocket: *ws, Text: *text, Seed: *seed,
		MaxSeconds: *maxSeconds, PreRoll: *preRoll, Verify: *verify,
		Progress: func(s string) { fmt.Fprintln(os.Stderr, "zonos loadtest:", s) }}

	sig := catchStopSignals()
	defer sig.stop()
	var runs []*loadtest.Result
	var out any
	if searching {
		s, err := loadtest.Find(sig.ctx, o, *streamsMax, func(r *loadtest.Result) {
			verdict := "none starved"
			if !r.Good() {
				verdict = loadtest.Why(r)
			}
			fmt.Fprintf(os.Stderr, "zonos loadtest: %d streams: %s\n", r.Streams, verdict)
		})
		if err != nil {
			return loadtestFailed(err, o, sig)
		}
		runs, out = s.Runs, s
		if !*asJSON {
			err = loadtest.WriteSearch(os.Stdout, s)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "zonos loadtest:", err)
			return 1
		}
	} else {
		r, err := loadtest.Run(sig.ctx, o, *streams)
		if err != nil {
			return loadtestFailed(err, o, sig)
		}
		runs, out = []*loadtest.Result{r}, r
		if !*asJSON {
			err = loadtest.WriteTable(os.Stdout, runs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "zonos loadtest:", err)
			return 1
		}
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintln(os.Stderr, "zonos loadtest:", err)
			return 1
		}
	}
	// Wrong audio is a failure of the server, whatever the speed.
	code := 0
	for _, r := range runs {
		for _, s := range r.PerStream {
			switch {
			case s.Mismatch != "":
				fmt.Fprintf(os.Stderr, "zonos loadtest: %d streams: stream %d (seed %d) differs from itself alone: %s\n", r.Streams, s.Index, s.Seed, s.Mismatch)
				code = 1
			case s.Error == "invalid_audio":
				fmt.Fprintf(os.Stderr, "zonos loadtest: %d streams: stream %d (seed %d): %s\n", r.Streams, s.Index, s.Seed, s.Message)
				code = 1
			}
		}
	}
	return code
}

// loadtestFailed words an error that ended the load test and gives its
// exit status.
func loadtestFailed(err error, o loadtest.Options, sig *stopSignals) int {
	if code := sig.exitCode(); code != 0 {
		fmt.Fprintln(os.Stderr, "zonos loadtest: interrupted")
		return code
	}
	msg := err.Error()
	switch {
	case errors.Is(err, loadtest.ErrUnauthorized) && o.APIKey == "":
		msg += " — pass a file holding the server's key with --api-key-file"
	case errors.Is(err, loadtest.ErrUnauthorized):
		msg += " — the key in --api-key-file is not one the server accepts"
	case errors.Is(err, loadtest.ErrUnreachable):
		msg += " — give the server's address with --url"
	}
	fmt.Fprintln(os.Stderr, "zonos loadtest:", msg)
	return 1
}

// readAPIKey is the first key of a key file in zonos serve's format (one
// a line, # comments), or "" when no file is given.
func readAPIKey(file string) (string, error) {
	keys, err := apiKeys(file)
	if err != nil || len(keys) == 0 {
		return "", err
	}
	return keys[0], nil
}
