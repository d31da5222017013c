module zonostream

go 1.26

require (
	github.com/gen2brain/malgo v0.11.24 // indirect
	github.com/go-audio/audio v1.0.0 // indirect
	github.com/go-audio/riff v1.0.0 // indirect
	github.com/go-audio/wav v1.1.0 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	gorgonia.org/cu v0.9.6 // indirect
)
