// Package assets holds the files the app ships with: the icon (drawn by
// gen_icon.go; regenerate with `go run assets/gen_icon.go`).
package assets

import _ "embed"

// Icon is the app icon, 256×256 PNG.
//
//go:embed icon.png
var Icon []byte
