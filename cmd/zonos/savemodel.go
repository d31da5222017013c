package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"zonostream/internal/bench"
)

// saveModelFlags are the bench flags that shape the model --save-model
// writes; the others measure.
var saveModelFlags = map[string]bool{"save-model": true, "model": true, "seed": true, "layers": true, "quick": true}

// saveModel is `zonos bench --save-model dir`: the random model the bench
// would build, written as a model bundle instead of measured. No backend is
// opened (the weights are made on the host), and a measuring flag given
// with it is refused rather than silently ignored.
func saveModel(fs *flag.FlagSet, dir string, o bench.Options, quick bool) int {
	var stray []string
	fs.Visit(func(f *flag.Flag) {
		if !saveModelFlags[f.Name] {
			stray = append(stray, "--"+f.Name)
		}
	})
	if len(stray) > 0 {
		fmt.Fprintf(os.Stderr, "zonos bench: --save-model writes the model and measures nothing; it takes --model, --seed, --layers and --quick, not %s\n",
			strings.Join(stray, ", "))
		return 2
	}
	if quick && !flagSet(fs, "layers") {
		o.Layers = bench.QuickOptions().Layers
	}
	if testShapes != nil {
		testShapes(&o)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := bench.SaveModel(ctx, dir, o, func(s string) { fmt.Fprintln(os.Stderr, "·", s) }); err != nil {
		fmt.Fprintln(os.Stderr, "zonos bench:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "wrote the model bundle %s; serve it with\n  zonos serve --zonos-dir %s --dac-dir %s\n",
		dir, filepath.Join(dir, "zonos"), filepath.Join(dir, "dac"))
	return 0
}
