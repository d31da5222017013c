package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"zonostream/engine/weights"
)

func init() {
	register("pull", "download model weights into the Hugging Face cache (resumable)", runPull)
}

func runPull(args []string) int {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: zonos pull [flags] [hybrid|transformer|all]   (default hybrid)

Downloads what the variant needs (model, DAC, speaker embedding) into the
Hugging Face cache; files already there, e.g. from Python, are used as they are.
Ctrl-C pauses; running the same command again resumes.

environment: HF_HUB_CACHE / HF_HOME (cache), HF_ENDPOINT (hub or mirror),
HF_TOKEN (token for gated or private repositories), HF_HUB_OFFLINE=1 (no network)

flags:`)
		fs.PrintDefaults()
	}
	cacheDir := fs.String("cache", "", "hub cache directory (default: $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub)")
	plain := fs.Bool("plain", false, "print progress as lines instead of bars")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	which := "hybrid"
	if fs.NArg() == 1 {
		which = fs.Arg(0)
	}
	var variants []weights.Variant
	if strings.EqualFold(which, "all") {
		variants = weights.Variants()
	} else {
		v, err := weights.ParseVariant(which)
		if err != nil {
			fmt.Fprintf(os.Stderr, "zonos pull: %v (or all)\n", err)
			return 2
		}
		variants = []weights.Variant{v}
	}
	cache, err := openCache(*cacheDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos pull:", err)
		return 2
	}
	d, err := weights.NewDownloader(cache)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos pull:", err)
		return 2
	}
	var files []weights.RepoFile
	if len(variants) == 1 {
		files = weights.BundleFiles(variants[0])
	} else {
		files = weights.AllFiles()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bars := newBars(os.Stderr, files, !*plain && isTerminal(os.Stderr))
	d.Progress = bars.update
	endpoint := d.Endpoint
	if u, err := url.Parse(endpoint); err == nil {
		endpoint = u.Redacted()
	}
	fmt.Fprintf(os.Stderr, "cache %s (from %s), endpoint %s\n", cache.Dir, cache.From, endpoint)
	_, err = d.Pull(ctx, files)
	bars.finish()
	if err != nil {
		var me *weights.MissingError
		if errors.As(err, &me) && len(variants) == 1 {
			me.Variant = variants[0]
		}
		fmt.Fprintln(os.Stderr, "zonos pull:", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	for _, v := range variants {
		b, err := weights.FindBundle(cache, v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zonos pull:", err)
			return 1
		}
		fmt.Printf("%s bundle ready: %s\n", v, b.ModelWeights)
	}
	return 0
}

// openCache is --cache when given, else the Hugging Face default.
func openCache(dir string) (weights.Cache, error) {
	if dir != "" {
		return weights.Cache{Dir: dir, From: "--cache"}, nil
	}
	return weights.DefaultCache()
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// bars renders per-file progress: on a terminal, one redrawn line per file;
// elsewhere, a line per phase change and per 10% of each download.
type bars struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	files   []weights.RepoFile
	state   map[weights.RepoFile]weights.Progress
	drawn   int // lines drawn last time (tty)
	last    time.Time
	tenths  map[weights.RepoFile]int64
	nameLen int
	width   int // terminal columns: a redrawn line must not wrap
}

func newBars(w io.Writer, files []weights.RepoFile, tty bool) *bars {
	b := &bars{w: w, tty: tty, files: files, state: map[weights.RepoFile]weights.Progress{}, tenths: map[weights.RepoFile]int64{}}
	for _, f := range files {
		b.nameLen = max(b.nameLen, len([]rune(label(f))))
		b.state[f] = weights.Progress{File: f, Phase: "", Total: -1}
	}
	b.width = 80
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 40 {
		b.width = n
	}
	if tty {
		b.nameLen = min(b.nameLen, b.width/2-4)
	}
	return b
}

func (b *bars) update(p weights.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.state[p.File]
	if p.Phase == weights.PhaseFailed && p.Bytes == 0 {
		p.Bytes, p.Total = prev.Bytes, prev.Total // show where it stopped
	}
	b.state[p.File] = p
	if b.tty {
		// Redraw at most 10 times a second, but always on a phase change.
		if p.Phase == prev.Phase && time.Since(b.last) < 100*time.Millisecond {
			return
		}
		b.last = time.Now()
		b.redraw()
		return
	}
	switch p.Phase {
	case weights.PhaseDownloading:
		if p.Total > 0 {
			tenth := p.Bytes * 10 / p.Total
			if prev.Phase == weights.PhaseDownloading && tenth == b.tenths[p.File] {
				return
			}
			b.tenths[p.File] = tenth
		} else if prev.Phase == weights.PhaseDownloading {
			return
		}
	case weights.PhaseVerifying, weights.PhaseStarting, weights.PhaseWaiting:
		if prev.Phase == p.Phase {
			return
		}
	}
	fmt.Fprintln(b.w, b.line(p))
}

// finish draws the final state once more (tty) so the last bars are exact.
func (b *bars) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty {
		b.redraw()
	}
}

func (b *bars) redraw() {
	if b.drawn > 0 {
		fmt.Fprintf(b.w, "\x1b[%dA", b.drawn) // back to the first bar
	}
	for _, f := range b.files {
		line := []rune(b.line(b.state[f]))
		if len(line) >= b.width {
			line = append(line[:b.width-2], '…')
		}
		fmt.Fprintf(b.w, "\r\x1b[2K%s\n", string(line))
	}
	b.drawn = len(b.files)
}

func (b *bars) line(p weights.Progress) string {
	name := []rune(label(p.File))
	if len(name) > b.nameLen {
		name = append([]rune{'…'}, name[len(name)-b.nameLen+1:]...)
	}
	pad := strings.Repeat(" ", b.nameLen-len(name))
	return b.status(string(name)+pad, p)
}

// label is a file's short name: the repository without its "Zonos-v0.1-"
// prefix, then the file ("hybrid/model.safetensors").
func label(f weights.RepoFile) string {
	_, repo, _ := strings.Cut(f.Repo, "/")
	return strings.TrimPrefix(repo, "Zonos-v0.1-") + "/" + f.Name
}

func (b *bars) status(name string, p weights.Progress) string {
	switch p.Phase {
	case "":
		return name + "  pending"
	case weights.PhaseCached:
		return fmt.Sprintf("%s  already in cache  %s", name, formatBytes(p.Total))
	case weights.PhaseStarting:
		return name + "  connecting…"
	case weights.PhaseWaiting:
		return name + "  waiting for another download of this file…"
	case weights.PhaseVerifying:
		return fmt.Sprintf("%s  checking %s already downloaded…", name, formatBytes(p.Bytes))
	case weights.PhaseDone:
		return fmt.Sprintf("%s  done  %s", name, formatBytes(p.Total))
	case weights.PhaseFailed:
		if errors.Is(p.Err, context.Canceled) {
			return fmt.Sprintf("%s  paused at %s", name, formatBytes(p.Bytes))
		}
		return fmt.Sprintf("%s  failed: %s", name, firstLine(p.Err))
	case weights.PhaseRetrying:
		return fmt.Sprintf("%s  retrying (attempt %d): %s", name, p.Attempt, firstLine(p.Err))
	}
	// Downloading.
	const width = 20
	pct, bar := "  ?%", strings.Repeat("·", width)
	size := formatBytes(p.Bytes)
	if p.Total > 0 {
		frac := float64(p.Bytes) / float64(p.Total)
		n := int(frac * width)
		bar = strings.Repeat("█", n) + strings.Repeat("·", width-n)
		pct = fmt.Sprintf("%3d%%", int(frac*100))
		size += "/" + formatBytes(p.Total)
	}
	s := fmt.Sprintf("%s  %s %s  %s", name, bar, pct, size)
	if p.Rate > 0 {
		s += "  " + formatBytes(int64(p.Rate)) + "/s"
	}
	if p.ETA >= 0 && p.Rate > 0 {
		s += "  ETA " + formatETA(p.ETA)
	}
	if p.Resumed > 0 {
		s += "  (resumed)"
	}
	return s
}

func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// formatBytes is decimal, as the hub shows sizes: "3.3 GB".
func formatBytes(n int64) string {
	if n < 0 {
		return "?"
	}
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), 0
	for f >= 1000 && u < 5 {
		f /= 1000
		u++
	}
	return fmt.Sprintf("%.1f %cB", f, "BkMGTP"[u])
}

func formatETA(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}
