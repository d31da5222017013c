package speaker

// GoldenFloats is goldenFloats for the external tests.
var GoldenFloats = goldenFloats
