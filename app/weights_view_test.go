package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2/test"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/weights"
)

// cliAdvice reports whether s tells the user to run a command.
func cliAdvice(s string) bool {
	return strings.Contains(s, "zonos ") || strings.Contains(strings.ToLower(s), "run the pull") || strings.Contains(s, "run '")
}

// TestDownloadFailureSaysWhatToDo: a download that cannot fetch anything
// (HF_HUB_OFFLINE here) says what happened and offers what the window can
// do — Retry, where each file goes, another folder — never a command to run.
func TestDownloadFailureSaysWhatToDo(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	a := test.NewTempApp(t)
	c := &weights.Cache{Dir: t.TempDir(), From: "test"}
	ui := New(a, Config{Models: noModels{}, Cache: c})
	var mu sync.Mutex
	ui.do = func(f func()) { mu.Lock(); defer mu.Unlock(); f() }
	on := func(f func()) { mu.Lock(); defer mu.Unlock(); f() }

	on(ui.models.download)
	var state string
	waitFor(t, "the download to fail", func() bool {
		on(func() { state = ui.models.state.Text })
		return strings.HasPrefix(state, "Download failed")
	})
	on(func() {
		if cliAdvice(state) {
			t.Errorf("the window tells a GUI user to run a command: %q", state)
		}
		for _, want := range []string{"6 file(s) could not be downloaded", "HF_HUB_OFFLINE", c.Dir, "Use an existing folder"} {
			if !strings.Contains(state, want) {
				t.Errorf("failure text lacks %q: %q", want, state)
			}
		}
		if ui.models.dl.Text != "Retry" || ui.models.dl.Disabled() {
			t.Errorf("download button %q (disabled %v), want Retry, enabled", ui.models.dl.Text, ui.models.dl.Disabled())
		}
		for f, r := range ui.models.rows {
			if !strings.Contains(r.label.Text, "goes to "+c.Dir) {
				t.Errorf("%s: row %q does not say where the file goes", f, r.label.Text)
			}
		}
	})
}

// TestDownloadFailureWording: an unreachable hub, a file that gave up
// after retries and a file to download afresh read as the window's actions
// (Retry), though their Error texts give the CLI's.
func TestDownloadFailureWording(t *testing.T) {
	c := weights.Cache{Dir: "/cache/hub"}
	f := weights.RepoFile{Repo: "descript/dac_44khz", Name: "config.json"}
	net := &weights.MissingError{Cache: c, Variant: weights.Hybrid, Missing: []weights.MissingFile{{RepoFile: f, Dest: "/cache/hub/x"}},
		Reason: "cannot reach https://huggingface.co: connection refused", Err: errors.New("connection refused")}
	gaveUp := &weights.RetryError{Err: errors.New("model.safetensors: unexpected EOF"), Attempts: 5, Resume: true}
	changed := &weights.RetryError{Err: errors.New("config.json: the file changed on the server while downloading (10 bytes, was 12)")}
	for _, e := range []error{net, gaveUp, changed} {
		if !cliAdvice(e.Error()) {
			t.Fatalf("weights gives no CLI advice in %q: this test has nothing left to check there", e)
		}
	}
	got := downloadFailure(errors.Join(gaveUp, changed, net), false)
	if cliAdvice(got) {
		t.Errorf("CLI advice in %q", got)
	}
	for _, want := range []string{"unexpected EOF (gave up after 5 attempts; press Retry to resume)", "(10 bytes, was 12); press Retry;",
		"1 file(s) could not be downloaded (cannot reach https://huggingface.co", "Press Retry", "/cache/hub"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// TestWeightsRowRetryWording: a file row that failed says what the window
// offers (press Retry) for a *weights.RetryError, and any other error as
// it is.
func TestWeightsRowRetryWording(t *testing.T) {
	c := &weights.Cache{Dir: t.TempDir(), From: "test"}
	ui := New(test.NewTempApp(t), Config{Models: noModels{}, Cache: c})
	v := ui.models
	v.refresh()
	f := weights.BundleFiles(weights.Hybrid)[0]
	if v.rows[f] == nil {
		t.Fatalf("no row for %s", f)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&weights.RetryError{Err: errors.New("cut"), Attempts: 2, Resume: true}, ": cut (gave up after 2 attempts; press Retry to resume)"},
		{fmt.Errorf("%s: disk full", f), ": " + f.String() + ": disk full"},
	} {
		v.progress(weights.Progress{File: f, Phase: weights.PhaseFailed, Err: c.err})
		if got := v.rows[f].label.Text; !strings.HasSuffix(got, c.want) || cliAdvice(got) {
			t.Errorf("row %q, want it to end %q", got, c.want)
		}
	}
}

// TestLoadMissingModelPointsToModelsTab: loading a model that is not
// installed says to download it in the Models tab, not to run 'zonos pull'.
func TestLoadMissingModelPointsToModelsTab(t *testing.T) {
	h := &HubModels{B: cpu.New(0), Cache: weights.Cache{Dir: t.TempDir()}}
	_, err := h.Load(context.Background(), "hybrid")
	if err == nil || cliAdvice(err.Error()) || !strings.Contains(err.Error(), "Models tab") {
		t.Fatalf("Load of a missing model: %v", err)
	}
	for _, ch := range h.Choices() {
		if ch.Installed || cliAdvice(ch.Detail) {
			t.Errorf("choice %+v", ch)
		}
	}
}
