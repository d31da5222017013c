package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"zonostream/engine"
	"zonostream/engine/speaker"
	"zonostream/internal/voices"
	"zonostream/server"
)

func init() {
	register("serve", "run the local speech service (OpenAI-compatible HTTP, WebSocket, a browser page)", runServe)
}

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runServe(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: zonos serve [flags]\n\nServes the engine over HTTP on %s: POST /v1/audio/speech (OpenAI-compatible),\nPOST /v1/tts, the WebSocket /v1/tts/stream, /v1/voices, /healthz, /readyz, /metrics and a page at /.\nAPI keys come from --api-key-file (one per line); they are required to listen beyond\nthis computer.\n\n", server.DefaultListen)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", server.DefaultListen, "address to listen on (host:port); beyond loopback an API key is required")
	keyFile := fs.String("api-key-file", "", "file of accepted API keys, one per line")
	var origins stringList
	fs.Var(&origins, "allow-origin", "a web origin (scheme://host:port) whose pages may call the API; repeatable")
	logText := fs.Bool("log-text", false, "include request text in the logs (off: text is never logged)")
	logJSON := fs.Bool("log-json", false, "write the request log as JSON lines")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGTERM, how long running streams may finish before they are ended")
	maxText := fs.Int("max-text-bytes", 1<<20, "longest text one request may give, bytes")
	maxQueue := fs.Int("max-queue", 16, "requests that may wait for the engine; more get 503")
	perKey := fs.Int("max-streams-per-key", 4, "streams one API key may have running or queued")
	quiet := fs.Bool("quiet", false, "print nothing but errors and warnings (no progress lines, no request log)")
	streams := fs.Int("streams", 0, "streams generated at once (1: one at a time, each alone; 0: as many as this device keeps ahead of real time, measured at start)")
	speakerDir := fs.String("speaker-dir", "", "folder with the speaker model's two .pt files, for voices from clips (default: the model cache)")
	mf := addModelFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "zonos serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	keys, err := apiKeys(*keyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		return 2
	}
	opts := &slog.HandlerOptions{}
	if *quiet {
		opts.Level = slog.LevelWarn
	}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if *logJSON {
		handler = slog.NewJSONHandler(os.Stderr, opts)
	}
	log := slog.New(handler)
	cfg := server.Config{Listen: *listen, APIKeys: keys, AllowOrigins: origins, Log: log, LogText: *logText, ShutdownGrace: *grace,
		Limits: server.Limits{MaxTextBytes: *maxText, MaxQueue: *maxQueue, MaxStreamsPerKey: *perKey}}
	if err := cfg.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		return 2
	}
	if *maxText > engine.MaxTextBytes {
		fmt.Fprintf(os.Stderr, "zonos serve: --max-text-bytes %d is over the engine's %d-byte limit\n", *maxText, engine.MaxTextBytes)
		return 2
	}
	lib, err := voices.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		return 1
	}
	sp := serveSpeaker(*speakerDir, log)

	sig := catchStopSignals()
	defer sig.stop()
	say := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(os.Stderr, format+"\n", a...)
		}
	}
	e, err := mf.load(*quiet)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		var nw *noWeightsError
		if errors.As(err, &nw) {
			return 2
		}
		return 1
	}
	defer e.Backend().Close() // after Serve has returned: every stream has ended
	if *streams != 0 {
		err = e.SetCapacity(*streams)
	} else {
		say("measuring how many streams this device keeps ahead of real time…")
		var steps []engine.CapacityStep
		steps, err = e.PlanCapacity(sig.ctx)
		for _, st := range steps {
			say("  %d streams: a decode step of %.2f ms (a frame is %.2f ms)", st.Streams, float64(st.Step)/1e6, float64(engine.FrameBudget)/1e6)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		return 2
	}
	say("up to %d streams at once (in one batch, the first decoded alone until another arrives)", e.Capacity())
	srv, err := server.New(e, lib, sp, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		return 1
	}
	// The port is open while the engine warms, so probes see "alive, not
	// ready" instead of "refused".
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(sig.ctx, ln) }()
	say("warming up the engine…")
	// Ready only once warmed: a warm-up that fails means the model does
	// not run here, and the server stops instead of answering every
	// request with that failure.
	if err := e.Warmup(sig.ctx, engine.Request{Text: "Warm up.", Knobs: engine.DefaultKnobs(), MaxSeconds: 2}); err != nil {
		if sig.ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "zonos serve: warm-up:", err)
			sig.stop()
			<-serveErr
			return 1
		}
	} else {
		srv.SetReady(true)
	}
	say("serving on http://%s (OpenAI base_url http://%s/v1); Ctrl-C to stop", ln.Addr(), ln.Addr())
	if err := <-serveErr; err != nil {
		fmt.Fprintln(os.Stderr, "zonos serve:", err)
		return 1
	}
	say("stopped: every stream ended, the engine freed")
	return 0
}

// apiKeys reads the accepted keys from file: one a line, blank lines and
// # comments skipped. A file, not a flag or the environment: a key on the
// command line shows in every process list, and one in the environment
// reaches every child process.
func apiKeys(file string) ([]string, error) {
	if file == "" {
		return nil, nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("API keys: %w", err)
	}
	defer fh.Close()
	var keys []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("API keys %s: %w", file, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("API keys: %s holds no key", file)
	}
	return keys, nil
}

// serveSpeaker finds the speaker model for voices made from clips; without
// it the server runs, and such requests are answered with what to install.
func serveSpeaker(dir string, log *slog.Logger) server.SpeakerModel {
	wp, lp := "", ""
	if dir != "" {
		wp, lp = filepath.Join(dir, speaker.WeightsFile), filepath.Join(dir, speaker.LDAFile)
	}
	wp, lp, err := speakerFiles(wp, lp, "pass --speaker-dir")
	if err != nil {
		log.Warn("voices from clips are unavailable", "reason", err.Error())
		return server.SpeakerModel{}
	}
	return server.SpeakerModel{Weights: wp, LDA: lp}
}
