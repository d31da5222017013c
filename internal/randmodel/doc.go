// Package randmodel builds the models of the real shapes with random
// weights — Zonos (either backbone), the DAC codec, the speaker ResNet —
// for benchmarks (internal/bench, `zonos bench`) and tests of the real
// geometry where the released checkpoints are not at hand. Each is fixed
// by its seed. The model packages read them as they read a checkpoint,
// through zonos.New, dac.New and speaker.New: the tensors are those
// zonos.TensorShapes and dac.TensorShapes list, and the speaker's are the
// released state dicts' names.
package randmodel
