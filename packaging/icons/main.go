// Command icons writes the app icon at the sizes freedesktop icon themes
// expect, as hicolor/<n>x<n>/apps/<name>.png under -out.
//
//	go run ./packaging/icons -src assets/icon.png -name io.zonosstream.app -out DIR/share/icons/hicolor
//
// Sizes come from the Icon Theme Specification's usual hicolor set; a source
// smaller than a size is scaled up (Catmull-Rom), so draw the source at 512
// or more for sharp large icons.
package main

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/image/draw"
)

func main() {
	src := flag.String("src", "assets/icon.png", "square source PNG")
	name := flag.String("name", "", "icon name (the app id), without .png")
	out := flag.String("out", "", "hicolor theme directory to write into")
	sizes := flag.String("sizes", "48,64,128,256,512", "comma-separated pixel sizes")
	flag.Parse()
	if *name == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "icons: -name and -out are required")
		os.Exit(2)
	}
	if err := run(*src, *name, *out, *sizes); err != nil {
		fmt.Fprintln(os.Stderr, "icons:", err)
		os.Exit(1)
	}
}

func run(src, name, out, sizes string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("decode %s: %w", src, err)
	}
	if b := img.Bounds(); b.Dx() != b.Dy() {
		return fmt.Errorf("%s is %dx%d: an icon must be square", src, b.Dx(), b.Dy())
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad size %q", s)
		}
		dir := filepath.Join(out, fmt.Sprintf("%dx%d", n, n), "apps")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := write(filepath.Join(dir, name+".png"), scale(img, n)); err != nil {
			return err
		}
	}
	return nil
}

// scale resamples img to n×n; the source itself is returned at its own size
// so that size is bit-exact.
func scale(img image.Image, n int) image.Image {
	if img.Bounds().Dx() == n {
		return img
	}
	dst := image.NewNRGBA(image.Rect(0, 0, n, n))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	return dst
}

func write(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return f.Close()
}
