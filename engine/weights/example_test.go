package weights_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"zonostream/engine/weights"
)

// The engine finds a bundle on disk and never downloads by itself.
func ExampleLocateBundle() {
	b, err := weights.LocateBundle(weights.Hybrid)
	var missing *weights.MissingError
	if errors.As(err, &missing) {
		fmt.Fprintln(os.Stderr, err) // names each file, where it would go, and 'zonos pull hybrid'
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(b.ModelWeights, b.DACWeights, b.SpeakerWeights)
}

// A download dialog: bars from Progress, pause by cancelling ctx, resume by
// pulling again.
func ExampleDownloader_PullBundle() {
	cache, err := weights.DefaultCache()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	d, err := weights.NewDownloader(cache) // HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	d.Progress = func(p weights.Progress) {
		// Called from download goroutines, one call at a time: hand the
		// values to the UI goroutine (fyne.Do) rather than touching widgets here.
		fmt.Printf("%s %s %d/%d %.0f B/s ETA %s\n", p.File, p.Phase, p.Bytes, p.Total, p.Rate, p.ETA)
	}
	ctx, pause := context.WithCancel(context.Background())
	defer pause()
	b, err := d.PullBundle(ctx, weights.Transformer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println("ready:", b.ModelWeights)
}
