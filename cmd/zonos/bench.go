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

	"zonostream/engine/bench"
	"zonostream/engine/zonos"
)

func init() {
	register("bench", "measure speed on random models of the real shapes", runBench)
}

func runBench(args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	o := bench.DefaultOptions()
	backend := fs.String("backend", "auto", "compute backend: auto (CUDA when built in and present, else CPU), cpu or cuda")
	variant := fs.String("model", "hybrid", "backbone: hybrid or transformer")
	fs.IntVar(&o.Runs, "runs", 0, "repetitions of prefill, TTFA and vocoder (default 10 on cuda, 2 on cpu)")
	fs.IntVar(&o.DecodeSteps, "steps", 0, "decode steps timed (default 200 on cuda, 5 on cpu)")
	fs.IntVar(&o.Frames, "frames", 0, "frames per fixed-length rollout (default 172 on cuda, 24 on cpu)")
	fs.IntVar(&o.PrefixLen, "prefix", o.PrefixLen, "prefill positions")
	fs.IntVar(&o.FirstChunk, "first-chunk", o.FirstChunk, "vocoder first chunk, frames")
	fs.IntVar(&o.Chunk, "chunk", o.Chunk, "vocoder steady chunk, frames")
	batches := fs.String("batch", "", "batch sizes whose decode step is timed, comma-separated, 0 for none (default 1,4,16 on cuda, 1,2 on cpu)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	write := fs.String("write", "", "also write the markdown report into this directory (e.g. docs/bench)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the measurements to this file (host-side costs)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch zonos.Variant(*variant) {
	case zonos.Hybrid, zonos.Transformer:
		o.Variant = zonos.Variant(*variant)
	default:
		fmt.Fprintf(os.Stderr, "zonos bench: --model %q: want hybrid or transformer\n", *variant)
		return 2
	}
	b, err := openBackend(*backend)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos bench:", err)
		return 2
	}
	defer b.Close()
	small := b.Name() == "cpu"
	def := func(p *int, gpu, cpu int) {
		if *p == 0 {
			*p = gpu
			if small {
				*p = cpu
			}
		}
	}
	def(&o.Runs, 10, 2)
	def(&o.DecodeSteps, 200, 5)
	def(&o.Frames, 172, 24)
	if small {
		o.BandwidthMB = 512
		o.Batches = []int{1, 2}
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
