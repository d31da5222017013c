package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"zonostream/engine/weights"
)

func init() {
	register("models", "list the model files in the Hugging Face cache: sizes, hash checks, paths", runModels)
}

func runModels(args []string) int {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	cacheDir := fs.String("cache", "", "hub cache directory (default: $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub)")
	verify := fs.Bool("verify", false, "hash every present file against the hub's sha256/git-sha1 and record the result")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: zonos models [--verify] [--cache DIR]")
		return 2
	}
	cache, err := openCache(*cacheDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos models:", err)
		return 2
	}
	files := weights.AllFiles()
	if *verify {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		st, err := cache.Status(files)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zonos models:", err)
			return 1
		}
		for _, s := range st {
			if !s.Present {
				continue
			}
			last := -1
			_, err := cache.Verify(ctx, s.Entry, func(done, total int64) {
				if pct := int(done * 100 / max(total, 1)); pct/10 != last/10 && isTerminal(os.Stderr) {
					last = pct
					fmt.Fprintf(os.Stderr, "\r\x1b[2Kverifying %s  %d%%", s.RepoFile, pct)
				}
			})
			if isTerminal(os.Stderr) {
				fmt.Fprint(os.Stderr, "\r\x1b[2K")
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "zonos models:", err)
				return 1
			}
		}
	}
	st, err := cache.Status(files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos models:", err)
		return 1
	}
	return printModels(os.Stdout, cache, st)
}

// printModels writes the bundle summary and the file table; the exit code
// is 1 when a file failed its hash check.
func printModels(w io.Writer, cache weights.Cache, st []weights.FileStatus) int {
	fmt.Fprintf(w, "Hugging Face cache: %s (from %s)\n\n", cache.Dir, cache.From)
	byFile := map[weights.RepoFile]weights.FileStatus{}
	for _, s := range st {
		byFile[s.RepoFile] = s
	}
	for _, v := range weights.Variants() {
		var missing, unchecked int
		var size int64
		for _, f := range weights.BundleFiles(v) {
			s := byFile[f]
			switch {
			case !s.Present:
				missing++
			case s.Check.State != weights.Verified:
				unchecked++
			}
			size += s.Entry.Size
		}
		switch {
		case missing > 0:
			fmt.Fprintf(w, "%-12s missing %d of 6 files: run 'zonos pull %s'\n", v, missing, v)
		case unchecked > 0:
			fmt.Fprintf(w, "%-12s complete, %s; %d file(s) not verified against the hub\n", v, formatBytes(size), unchecked)
		default:
			fmt.Fprintf(w, "%-12s complete, %s, all verified\n", v, formatBytes(size))
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tSIZE\tCHECK\tPATH")
	code := 0
	var notes []string
	for _, s := range st {
		if !s.Present {
			where := "would go to " + s.Dest
			if s.Partial > 0 {
				where += fmt.Sprintf(" (%s downloaded; 'zonos pull' resumes)", formatBytes(s.Partial))
			}
			fmt.Fprintf(tw, "%s\t-\tmissing\t%s\n", s.RepoFile, where)
			continue
		}
		if s.Check.State == weights.Mismatch {
			code = 1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.RepoFile, formatBytes(s.Entry.Size), s.Check.State, s.Entry.Path)
		if s.Check.State != weights.Verified {
			notes = append(notes, fmt.Sprintf("%s: %s", s.RepoFile, s.Check.Detail))
		}
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(w, "\n"+strings.Join(notes, "\n"))
	}
	return code
}
