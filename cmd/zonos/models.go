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
		if err := verifyFiles(ctx, cache, files); err != nil {
			fmt.Fprintln(os.Stderr, "zonos models:", err)
			return 1
		}
	}
	st, err := cache.Status(files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos models:", err)
		return 1
	}
	return printModels(os.Stdout, cache, st)
}

// verifyFiles hashes every present file of files against the hub's hash
// and records the result, showing progress on a terminal.
func verifyFiles(ctx context.Context, cache weights.Cache, files []weights.RepoFile) error {
	st, err := cache.Status(files)
	if err != nil {
		return err
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
			return err
		}
	}
	return nil
}

// bundleSummary is one variant's six files in the cache, for `zonos
// models` and `zonos doctor`.
type bundleSummary struct {
	complete bool   // every file present and none failed its hash check
	detail   string // "complete, 3.3 GB, all verified", "missing 2 of 6 files"
	fix      string // what to run when not complete
	// unverified counts the files present whose contents no hash check
	// has confirmed yet.
	unverified int
}

// summarizeBundle sums up variant v's files from the cache's status.
func summarizeBundle(v weights.Variant, st []weights.FileStatus) bundleSummary {
	byFile := map[weights.RepoFile]weights.FileStatus{}
	for _, s := range st {
		byFile[s.RepoFile] = s
	}
	files := weights.BundleFiles(v)
	var missing, unchecked int
	var bad []string
	var size int64
	for _, f := range files {
		s := byFile[f]
		switch {
		case !s.Present:
			missing++
		case s.Check.State == weights.Mismatch:
			bad = append(bad, f.String())
		case s.Check.State != weights.Verified:
			unchecked++
		}
		size += s.Entry.Size
	}
	switch {
	case missing > 0:
		return bundleSummary{detail: fmt.Sprintf("missing %d of %d files", missing, len(files)), fix: fmt.Sprintf("run 'zonos pull %s'", v)}
	case len(bad) > 0:
		return bundleSummary{detail: fmt.Sprintf("%s failed the hash check", strings.Join(bad, ", ")),
			fix: "delete the file from the cache and run 'zonos pull " + string(v) + "' to download it again"}
	case unchecked > 0:
		return bundleSummary{complete: true, detail: fmt.Sprintf("complete, %s; %d file(s) not verified against the hub", formatBytes(size), unchecked), unverified: unchecked}
	}
	return bundleSummary{complete: true, detail: fmt.Sprintf("complete, %s, all verified", formatBytes(size))}
}

// printModels writes the bundle summary and the file table; the exit code
// is 1 when a file failed its hash check.
func printModels(w io.Writer, cache weights.Cache, st []weights.FileStatus) int {
	fmt.Fprintf(w, "Hugging Face cache: %s (from %s)\n\n", cache.Dir, cache.From)
	for _, v := range weights.Variants() {
		b := summarizeBundle(v, st)
		if b.fix != "" {
			fmt.Fprintf(w, "%-12s %s: %s\n", v, b.detail, b.fix)
		} else {
			fmt.Fprintf(w, "%-12s %s\n", v, b.detail)
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
