package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"

	"zonostream/engine/zonos"
	"zonostream/internal/bench"
)

func init() {
	register("bench", "measure speed on random models of the real shapes", runBench)
}

func runBench(args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: zonos bench [flags]

Measures the engine's speed on a randomly initialised model of the real
shapes (Zonos hybrid or transformer and the 44 kHz DAC), built in memory, so
no download is needed: decode step against the weight-read floor, prefill,
time to first audio, steady per-frame latency, generation and vocoder
real-time factors, batched decode steps and memory, each as p50 / p90;
then a long-form reading (--long-form) streamed to a simulated real-time
player: underruns, the latency at part boundaries, heap and device memory.

On a GPU it builds the whole model. On the CPU the default is --quick: the
real widths with 2 of the backbone's layers, one short run, which finishes
in about a minute on 2 cores; its figures are for that reduced backbone (the
report says so), not the model's. --quick=false builds the whole model,
which takes many minutes on a CPU.

--save-model DIR measures nothing: it writes the same random model (the
--model variant, --seed, --layers or --quick's 2 layers if given, else
every layer) as a model bundle, DIR/zonos and DIR/dac (config.json and
model.safetensors each; about 3.3 GB for the hybrid), for a machine that
cannot download the real weights:
  zonos serve --zonos-dir DIR/zonos --dac-dir DIR/dac
serves it (for zonos loadtest), and zonos say speaks from it with the same
two flags. DIR must be new or empty.

flags:`)
		fs.PrintDefaults()
	}
	o := bench.DefaultOptions()
	backend := addBackendFlags(fs, "auto")
	variant := fs.String("model", "hybrid", "backbone: hybrid or transformer")
	quick := fs.Bool("quick", false, "real widths, 2 backbone layers, one short run: a check that finishes in about a minute on a CPU (default true on cpu)")
	fs.IntVar(&o.Layers, "layers", 0, "build only the first `n` backbone layers (real widths, the attention pattern kept); 0 for all (default all, 2 with --quick)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the random weights")
	saveDir := fs.String("save-model", "", "write the random model as a model bundle into this new or empty `dir` (dir/zonos, dir/dac) instead of measuring")
	var runs, steps, frames int
	fs.IntVar(&runs, "runs", 0, "repetitions of prefill, TTFA and vocoder (default 10 on cuda, 2 on cpu, 1 with --quick)")
	fs.IntVar(&steps, "steps", 0, "decode steps timed (default 200 on cuda, 5 on cpu, 3 with --quick)")
	fs.IntVar(&frames, "frames", 0, "frames per fixed-length rollout (default 172 on cuda, 24 on cpu, 9 with --quick)")
	fs.IntVar(&o.PrefixLen, "prefix", o.PrefixLen, "prefill positions")
	fs.IntVar(&o.FirstChunk, "first-chunk", o.FirstChunk, "vocoder first chunk, frames")
	fs.IntVar(&o.Chunk, "chunk", o.Chunk, "vocoder steady chunk, frames")
	batches := fs.String("batch", "", "batch sizes whose decode step is timed, comma-separated, 0 for none (default 1,4,16 on cuda, 1,2 on cpu, none with --quick)")
	longForm := fs.Duration("long-form", 0, "audio of the long-form reading streamed to a simulated player (default 10m on cuda, none on cpu; 0 for none)")
	fs.IntVar(&o.LongFormPartFrames, "long-form-part", o.LongFormPartFrames, "frames in each part of the long-form reading")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	write := fs.String("write", "", "also write the markdown report into this directory (e.g. docs/bench)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the measurements to this file (host-side costs)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "zonos bench: unexpected argument %q (bench takes flags only)\n", fs.Arg(0))
		return 2
	}
	switch zonos.Variant(*variant) {
	case zonos.Hybrid, zonos.Transformer:
		o.Variant = zonos.Variant(*variant)
	default:
		fmt.Fprintf(os.Stderr, "zonos bench: --model %q: want hybrid or transformer\n", *variant)
		return 2
	}
	if *saveDir != "" {
		return saveModel(fs, *saveDir, o, *quick)
	}
	b, err := openBackend(*backend)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos bench:", err)
		return 2
	}
	defer b.Close()
	onCPU := b.Name() == "cpu"
	if !flagSet(fs, "quick") {
		*quick = onCPU
	}
	switch {
	case *quick:
		q := bench.QuickOptions()
		if !flagSet(fs, "layers") {
			o.Layers = q.Layers
		}
		o.Runs, o.DecodeSteps, o.Frames, o.BandwidthMB, o.Batches = q.Runs, q.DecodeSteps, q.Frames, q.BandwidthMB, q.Batches
		o.LongFormSeconds = q.LongFormSeconds
	case onCPU:
		o.Runs, o.DecodeSteps, o.Frames, o.BandwidthMB, o.Batches = 2, 5, 24, 512, []int{1, 2}
		o.LongFormSeconds = 0
	}
	if flagSet(fs, "long-form") {
		o.LongFormSeconds = longForm.Seconds()
	}
	for _, f := range []struct {
		p *int
		v int
	}{{&o.Runs, runs}, {&o.DecodeSteps, steps}, {&o.Frames, frames}} {
		if f.v != 0 {
			*f.p = f.v
		}
	}
	if *batches != "" {
		o.Batches = nil
		for _, f := range strings.Split(*batches, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				fmt.Fprintf(os.Stderr, "zonos bench: --batch %q: want sizes like 1,4,16 (or 0 for none)\n", *batches)
				return 2
			}
			if n > 0 {
				o.Batches = append(o.Batches, n)
			}
		}
	}
	if testShapes != nil {
		testShapes(&o)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zonos bench:", err)
			return 1
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintln(os.Stderr, "zonos bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	r, err := bench.Run(ctx, b, o, func(s string) { fmt.Fprintln(os.Stderr, "·", s) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos bench:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		r.Text(os.Stdout)
	}
	if *write != "" {
		if err := os.MkdirAll(*write, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "zonos bench:", err)
			return 1
		}
		p := filepath.Join(*write, r.FileName())
		f, err := os.Create(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zonos bench:", err)
			return 1
		}
		r.Markdown(f)
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "zonos bench:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "wrote", p)
	}
	return 0
}

// testShapes, when set, replaces the real shapes (the tests build the tiny
// golden models instead).
var testShapes func(*bench.Options)

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
