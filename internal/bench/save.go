package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"zonostream/engine/weights"
	"zonostream/internal/randmodel"
)

// SaveModel writes the random models Run would build from o (o.Variant or
// o.Model, o.Layers, o.DAC, o.Seed) as a model bundle in dir, laid out as
// the released checkpoints are, so that engine.PathsFromDirs and every
// command that loads a model read it:
//
//	dir/zonos/config.json, dir/zonos/model.safetensors (bf16)
//	dir/dac/config.json,   dir/dac/model.safetensors   (float32)
//
// It lets a machine that cannot download the real weights serve and load
// test models of their exact shapes. dir must be new or empty. Each file
// is written to a temporary name, synced and renamed, each model's
// config.json after its weights; on failure what was written is removed.
// progress (may be nil) hears each step.
func SaveModel(ctx context.Context, dir string, o Options, progress func(string)) (err error) {
	if progress == nil {
		progress = func(string) {}
	}
	sh, err := shapesOf(o)
	if err != nil {
		return err
	}
	if err := checkEmpty(dir); err != nil {
		return err
	}
	var made []string // files and directories, in the order made
	defer func() {
		if err == nil {
			return
		}
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
	}()
	mkdir := func(d string) error {
		if _, err := os.Stat(d); err == nil {
			return nil
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("save model: %w", err)
		}
		made = append(made, d)
		return nil
	}
	write := func(path string, enc func(io.Writer) error) error {
		if err := writeAtomic(ctx, path, enc); err != nil {
			return err
		}
		made = append(made, path)
		return nil
	}
	if err := mkdir(dir); err != nil {
		return err
	}

	zdir, ddir := filepath.Join(dir, "zonos"), filepath.Join(dir, "dac")
	progress(fmt.Sprintf("building a random %s model %s (seed %d)", sh.zonos.Variant(), sh.what, o.Seed))
	zf, err := randmodel.Zonos(sh.zonos, o.Seed)
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	var zts []*weights.Tensor
	for _, n := range zf.Names() {
		t, err := zf.Tensor(n)
		if err != nil {
			return fmt.Errorf("save model: %w", err)
		}
		zts = append(zts, t)
	}
	zcfg, err := sh.zonos.JSON()
	if err != nil {
		return fmt.Errorf("save model: zonos config: %w", err)
	}
	if err := mkdir(zdir); err != nil {
		return err
	}
	if err := writeWeights(write, filepath.Join(zdir, "model.safetensors"), zts, zf.Metadata, progress); err != nil {
		return err
	}
	if err := write(filepath.Join(zdir, "config.json"), bytesOf(append(zcfg, '\n'))); err != nil {
		return err
	}

	progress(fmt.Sprintf("building a random DAC (%d Hz, hop %d, %d codebooks; seed %d)", sh.dac.SamplingRate, sh.dac.HopLength, sh.dac.NCodebooks, o.Seed))
	src, err := randmodel.DAC(sh.dac, o.Seed)
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	var dts []*weights.Tensor
	for _, n := range src.Names() {
		t, err := src.Tensor(n)
		if err != nil {
			return fmt.Errorf("save model: dac: %w", err)
		}
		dts = append(dts, t)
	}
	dcfg, err := sh.dac.JSON()
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := mkdir(ddir); err != nil {
		return err
	}
	meta := map[string]string{"format": "pt", "origin": "zonos-stream random init"}
	if err := writeWeights(write, filepath.Join(ddir, "model.safetensors"), dts, meta, progress); err != nil {
		return err
	}
	return write(filepath.Join(ddir, "config.json"), bytesOf(append(dcfg, '\n')))
}

// writeWeights writes one safetensors file, saying its size first.
func writeWeights(write func(string, func(io.Writer) error) error, path string, ts []*weights.Tensor, meta map[string]string, progress func(string)) error {
	var n int64
	for _, t := range ts {
		n += int64(len(t.Data))
	}
	progress(fmt.Sprintf("writing %s (%d tensors, %s)", path, len(ts), sizeText(n)))
	return write(path, func(w io.Writer) error {
		_, err := weights.EncodeTo(w, ts, meta)
		return err
	})
}

// bytesOf writes b.
func bytesOf(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

// checkEmpty accepts a directory that is absent or empty, and refuses one
// that holds anything, naming what: a bundle is never written over files.
func checkEmpty(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return fmt.Errorf("save model: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("save model: %s is a file, not a directory", dir)
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if len(es) == 0 {
		return nil
	}
	for _, p := range []string{"zonos/config.json", "zonos/model.safetensors", "dac/config.json", "dac/model.safetensors"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return fmt.Errorf("save model: %s already holds a model (%s); remove it or give a new or empty directory", dir, p)
		}
	}
	var names []string
	for i, e := range es {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(es)-3))
			break
		}
		names = append(names, e.Name())
	}
	return fmt.Errorf("save model: %s is not empty (it holds %s); give a new or empty directory", dir, strings.Join(names, ", "))
}

// writeAtomic writes path through enc to a temporary file beside it,
// syncs it and renames it into place (mode 0644), so that path is either
// absent or whole; ctx stops the writing.
func writeAtomic(ctx context.Context, path string, enc func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("save model: writing %s: %w", path, err)
	}
	w := bufio.NewWriterSize(ctxWriter{ctx, f}, 1<<20)
	if err := enc(w); err != nil {
		return fail(err)
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save model: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save model: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // the rename itself survives a crash
		d.Sync()
		d.Close()
	}
	return nil
}

// ctxWriter fails its writes once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// sizeText is n bytes in MB or GB (10⁶, 10⁹), as disk sizes are given.
func sizeText(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
