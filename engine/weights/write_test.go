package weights

import (
	"bytes"
	"testing"
)

// TestEncodeToIsEncode: the streamed image is byte for byte the one Encode
// builds in memory, whatever order the tensors come in, and the count
// returned is its length.
func TestEncodeToIsEncode(t *testing.T) {
	ts := []*Tensor{
		F32Tensor("z.weight", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
		{Name: "a.bias", DType: BF16, Shape: []int{3}, Data: []byte{0x80, 0x3f, 0, 0x40, 0, 0}},
		F32Tensor("m", []int{}, []float32{7}),
	}
	meta := map[string]string{"format": "pt"}
	want, err := Encode(ts, meta)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	n, err := EncodeTo(&got, ts, meta)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(want)) || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("EncodeTo wrote %d bytes (returned %d), Encode built %d; equal %v", got.Len(), n, len(want), bytes.Equal(got.Bytes(), want))
	}
	if _, err := Parse("streamed", got.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := EncodeTo(&got, []*Tensor{{Name: "bad", DType: F32, Shape: []int{2}, Data: []byte{0}}}, nil); err == nil {
		t.Error("a tensor whose bytes do not fit its shape was encoded")
	}
}
