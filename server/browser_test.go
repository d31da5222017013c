package server_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserTimeout bounds everything one browser test does, so a page that
// never finishes fails the test instead of hanging it. The waits inside
// (chromedp.Poll) have no timeouts of their own: this is the only one.
const browserTimeout = 2 * time.Minute

// browser is a headless Chromium tab for one test, and what its pages
// threw or logged.
type browser struct {
	ctx context.Context
	mu  sync.Mutex
	log []string // console messages and uncaught exceptions, in order
	exc []string // uncaught exceptions
}

// newBrowser starts Debian's headless chromium for t (closed when the
// test ends). Without chromium the test fails, telling how to install it,
// except under -short. Extra flags are added to the command line.
func newBrowser(t *testing.T, flags ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if testing.Short() {
			t.Skip("chromium not found (-short)")
		}
		t.Fatal("the page is tested in Debian's headless chromium: run make deps (it installs the chromium package)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// The page plays what it receives without a click on the page
		// itself having to unlock audio. Muted, Web Audio still runs: its
		// clock advances and scheduled buffers end (with or without a
		// sound card), only nothing is heard.
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	opts = append(opts, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancelTab()
		t.Fatalf("starting chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.log = append(b.log, m.String())
			if m.IsException() {
				b.exc = append(b.exc, m.String())
			}
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		<-read
		if t.Failed() && len(b.log) > 0 {
			t.Logf("browser console:\n%s", strings.Join(b.log, "\n"))
		}
	})
	return b
}

// do runs actions in the tab, failing the test at the first error.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the tab and decodes its value
// (a promise is awaited).
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// exceptions are the uncaught exceptions the tab's pages threw so far.
func (b *browser) exceptions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.exc...)
}
