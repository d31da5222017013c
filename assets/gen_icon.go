//go:build ignore

// gen_icon draws assets/icon.png: a rounded indigo square with a white
// waveform of bars, the app's icon. Run: go run assets/gen_icon.go
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
)

func main() {
	const n = 256
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	bg := color.NRGBA{0x3f, 0x3d, 0xb8, 0xff}
	fg := color.NRGBA{0xff, 0xff, 0xff, 0xff}
	r := 48.0 // corner radius
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			dx := math.Max(0, math.Max(r-float64(x)-0.5, float64(x)+0.5-(n-r)))
			dy := math.Max(0, math.Max(r-float64(y)-0.5, float64(y)+0.5-(n-r)))
			if dx*dx+dy*dy <= r*r {
				img.Set(x, y, bg)
			}
		}
	}
	// Nine bars, one per Zonos codebook, heights of a spoken syllable.
	heights := []float64{0.18, 0.34, 0.56, 0.8, 0.62, 0.9, 0.48, 0.3, 0.16}
	bw, gap := 16, 8
	x0 := (n - len(heights)*bw - (len(heights)-1)*gap) / 2
	for i, h := range heights {
		half := int(h * 0.38 * n)
		for y := n/2 - half; y < n/2+half; y++ {
			for x := x0 + i*(bw+gap); x < x0+i*(bw+gap)+bw; x++ {
				img.Set(x, y, fg)
			}
		}
	}
	f, err := os.Create("assets/icon.png")
	if err != nil {
		log.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
