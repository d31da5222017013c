package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"zonostream/engine/weights"
)

// cacheDirPref remembers a cache folder the user chose.
const cacheDirPref = "hub.dir"

// weightsView is the Models tab: what is installed, what a model needs,
// and the download with per-file progress, pause and resume; or an
// existing folder.
type weightsView struct {
	ui      *UI
	obj     fyne.CanvasObject
	variant *widget.Select
	where   *widget.Label
	files   *fyne.Container
	rows    map[weights.RepoFile]*fileRow
	dl      *widget.Button
	pause   *widget.Button
	state   *widget.Label
	cancel  context.CancelFunc
}

// fileRow is one file's line: name, state and progress bar.
type fileRow struct {
	label *widget.Label
	bar   *levelBar
}

const weightsIntro = `Zonos Stream speaks with Zyphra's Zonos v0.1 model. A model bundle is six files from the Hugging Face hub:
the Zonos model (hybrid or transformer, about 3.3 GB), the DAC audio codec (descript/dac_44khz, about 300 MB)
and the speaker-embedding model used for voice cloning.
Files already in your Hugging Face cache (for example from running Zonos in Python) are used as they are.
Downloads resume where they stopped and are checked against the hub's hashes.`

func newWeightsView(ui *UI) *weightsView {
	v := &weightsView{ui: ui, rows: map[weights.RepoFile]*fileRow{}}
	intro := widget.NewLabel(strings.ReplaceAll(weightsIntro, "\n", " "))
	intro.Wrapping = fyne.TextWrapWord
	v.where = widget.NewLabel("")
	v.where.Wrapping = fyne.TextWrapWord
	v.state = widget.NewLabel("")
	v.state.Wrapping = fyne.TextWrapWord
	var names []string
	for _, x := range weights.Variants() {
		names = append(names, string(x))
	}
	v.variant = widget.NewSelect(names, func(string) { v.refresh() })
	v.variant.SetSelected(string(weights.Hybrid))
	if _, err := weights.ParseVariant(ui.settings.Variant); err == nil {
		v.variant.SetSelected(ui.settings.Variant)
	}
	v.files = container.NewVBox()
	v.dl = widget.NewButtonWithIcon("Download", theme.DownloadIcon(), v.download)
	v.dl.Importance = widget.HighImportance
	v.pause = widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), v.doPause)
	v.pause.Disable()
	folder := widget.NewButtonWithIcon("Use an existing folder…", theme.FolderOpenIcon(), v.chooseFolder)
	if ui.cfg.Cache == nil {
		v.dl.Disable()
		folder.Disable()
	}
	if p := ui.App.Preferences().String(cacheDirPref); p != "" && ui.cfg.Cache != nil {
		if c, err := cacheFromFolder(p); err == nil {
			v.useCache(c)
		}
	}
	v.obj = container.NewVScroll(container.NewVBox(
		intro,
		widget.NewForm(widget.NewFormItem("Model", v.variant)),
		v.where,
		container.NewHBox(v.dl, v.pause, folder),
		v.state,
		v.files,
	))
	return v
}

func (v *weightsView) selected() weights.Variant {
	x, err := weights.ParseVariant(v.variant.Selected)
	if err != nil {
		return weights.Hybrid
	}
	return x
}

// refresh re-reads the cache for the selected variant (disk only).
func (v *weightsView) refresh() {
	if v.files == nil {
		return
	}
	c := v.ui.cfg.Cache
	if c == nil {
		v.where.SetText("Models come from fixed folders given on the command line (--model-dir); downloads are off.")
		return
	}
	v.where.SetText(fmt.Sprintf("Hugging Face cache: %s (from %s)", c.Dir, c.From))
	st, err := c.Status(weights.BundleFiles(v.selected()))
	if err != nil {
		v.state.SetText(err.Error())
		return
	}
	v.files.RemoveAll()
	v.rows = map[weights.RepoFile]*fileRow{}
	missing := 0
	for _, f := range st {
		r := &fileRow{label: widget.NewLabel(""), bar: newLevelBar()}
		r.label.Truncation = fyne.TextTruncateEllipsis
		switch {
		case f.Present:
			r.label.SetText(fmt.Sprintf("✓ %s  (%s)", f.RepoFile, humanSize(f.Entry.Size)))
			r.bar.SetValue(1)
		case f.Partial > 0:
			missing++
			r.label.SetText(fmt.Sprintf("%s — %s downloaded, will resume", f.RepoFile, humanSize(f.Partial)))
		default:
			missing++
			r.label.SetText(fmt.Sprintf("%s — missing", f.RepoFile))
		}
		v.rows[f.RepoFile] = r
		v.files.Add(container.NewVBox(r.label, r.bar))
	}
	if v.cancel == nil {
		if missing == 0 {
			v.state.SetText(fmt.Sprintf("The %s model is installed.", v.selected()))
			v.dl.Disable()
		} else {
			v.state.SetText(fmt.Sprintf("%d of 6 files missing.", missing))
			v.dl.Enable()
		}
	}
}

// download pulls the selected variant's bundle (or resumes it).
func (v *weightsView) download() {
	c := v.ui.cfg.Cache
	if c == nil || v.cancel != nil {
		return
	}
	d, err := weights.NewDownloader(*c)
	if err != nil {
		v.ui.showError(err)
		return
	}
	variant := v.selected()
	last := map[weights.RepoFile]time.Time{} // Progress calls are serialised
	d.Progress = func(p weights.Progress) {
		if p.Phase == weights.PhaseDownloading && time.Since(last[p.File]) < 100*time.Millisecond {
			return // at most ten updates a second per file
		}
		last[p.File] = time.Now()
		v.ui.do(func() { v.progress(p) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.dl.Disable()
	v.pause.Enable()
	v.variant.Disable()
	v.state.SetText(fmt.Sprintf("Downloading the %s model…", variant))
	go func() {
		_, err := d.PullBundle(ctx, variant)
		v.ui.do(func() {
			v.cancel = nil
			v.pause.Disable()
			v.variant.Enable()
			v.refresh()
			v.ui.compose.refreshModels()
			switch {
			case errors.Is(err, context.Canceled):
				v.state.SetText("Paused. Press Download to resume where it stopped.")
				v.dl.SetText("Resume")
				v.dl.Enable()
			case err != nil:
				v.state.SetText(downloadFailure(err, d.Offline))
				v.showDestinations(err)
				v.dl.SetText("Retry")
				v.dl.Enable()
			default:
				v.dl.SetText("Download")
				v.state.SetText(fmt.Sprintf("The %s model is ready.", variant))
				v.ui.notify(fmt.Sprintf("The %s model is installed; you can speak now.", variant))
				v.ui.Preload() // the selected model, if that is the one just installed
			}
		})
	}()
}

// progress shows one report; UI goroutine.
func (v *weightsView) progress(p weights.Progress) {
	r := v.rows[p.File]
	if r == nil {
		return
	}
	if p.Total > 0 {
		r.bar.SetValue(float64(p.Bytes) / float64(p.Total))
	}
	msg := fmt.Sprintf("%s — %s", p.File, p.Phase)
	switch p.Phase {
	case weights.PhaseDownloading:
		msg += fmt.Sprintf("  %s / %s", humanSize(p.Bytes), humanSize(p.Total))
		if p.Rate > 0 {
			msg += fmt.Sprintf("  %s/s", humanSize(int64(p.Rate)))
		}
		if p.ETA > 0 {
			msg += fmt.Sprintf("  ETA %s", p.ETA.Round(time.Second))
		}
	case weights.PhaseRetrying, weights.PhaseFailed:
		if p.Err != nil {
			msg += ": " + guiText(p.Err)
		}
	case weights.PhaseDone, weights.PhaseCached:
		msg = fmt.Sprintf("✓ %s  (%s)", p.File, humanSize(p.Total))
		r.bar.SetValue(1)
	}
	r.label.SetText(msg)
}

// showDestinations puts where each file the download could not fetch
// belongs on its row, for copying it there by hand.
func (v *weightsView) showDestinations(err error) {
	var me *weights.MissingError
	if !errors.As(err, &me) {
		return
	}
	for _, m := range me.Missing {
		if r := v.rows[m.RepoFile]; r != nil {
			r.label.SetText(fmt.Sprintf("%s — not downloaded; it goes to %s", m.RepoFile, m.Dest))
		}
	}
}

// downloadFailure says what went wrong with a download and what the user
// can do about it in this window. Package weights words its errors for the
// command line (run 'zonos pull', run the pull again); here the actions
// are the Retry button, the cache folder and "Use an existing folder…",
// worded from the errors' fields (MissingError.Reason, guiText).
// offline is the downloader's HF_HUB_OFFLINE.
func downloadFailure(err error, offline bool) string {
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	var what []string
	dir := ""
	for _, e := range parts {
		var me *weights.MissingError
		if !errors.As(e, &me) {
			what = append(what, guiText(e))
			continue
		}
		dir = me.Cache.Dir
		s := fmt.Sprintf("%d file(s) could not be downloaded", len(me.Missing))
		if me.Reason != "" {
			s += " (" + me.Reason + ")"
		}
		what = append(what, s)
	}
	msg := "Download failed: " + strings.Join(what, "; ") + "."
	if offline {
		msg += " Start the app without HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE set to download them,"
	} else {
		msg += " Press Retry to try again (finished files and partial downloads are kept),"
	}
	if dir != "" {
		msg += fmt.Sprintf(" copy the files into the Hugging Face cache %s (each row says where), or press “Use an existing folder…” to use a cache that has them.", dir)
	} else {
		msg += " or press “Use an existing folder…” to use a Hugging Face cache that has the files."
	}
	return msg
}

// guiText is err's text for this window: a download that pulling again
// gets past (*weights.RetryError) says to press Retry, where its Error
// says to run the pull again.
func guiText(err error) string {
	var re *weights.RetryError
	if errors.As(err, &re) {
		return re.Advise("press Retry")
	}
	return err.Error()
}

func (v *weightsView) doPause() {
	if v.cancel != nil {
		v.cancel()
		v.pause.Disable()
		v.state.SetText("Pausing…")
	}
}

// chooseFolder lets the user point at an existing Hugging Face cache.
func (v *weightsView) chooseFolder() {
	dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil {
			v.ui.showError(err)
			return
		}
		if u == nil {
			return
		}
		c, err := cacheFromFolder(u.Path())
		if err != nil {
			v.ui.showError(err)
			return
		}
		v.ui.App.Preferences().SetString(cacheDirPref, c.Dir)
		v.useCache(c)
		v.ui.refreshModels()
	}, v.ui.Win)
}

func (v *weightsView) useCache(c weights.Cache) {
	*v.ui.cfg.Cache = c
	if v.ui.cfg.OnCacheChosen != nil {
		v.ui.cfg.OnCacheChosen(c)
	}
}

// cacheFromFolder accepts a hub cache (holding models--ORG--NAME folders)
// or a folder with a hub/ cache inside (an HF_HOME).
func cacheFromFolder(dir string) (weights.Cache, error) {
	for _, d := range []string{dir, filepath.Join(dir, "hub")} {
		m, _ := filepath.Glob(filepath.Join(d, "models--*"))
		if len(m) > 0 {
			return weights.Cache{Dir: d, From: "chosen folder"}, nil
		}
	}
	if _, err := os.Stat(dir); err != nil {
		return weights.Cache{}, err
	}
	return weights.Cache{}, fmt.Errorf("%s is not a Hugging Face cache: it holds no models--ORG--NAME folders (look for ~/.cache/huggingface/hub)", dir)
}

func humanSize(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
