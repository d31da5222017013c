package weights

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// image builds a safetensors file image from a raw header and body.
func image(header string, body []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(body))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, body...)
}

func TestWriteOpenRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.safetensors")
	f32 := make([]byte, 4*6)
	binary.LittleEndian.PutUint32(f32[4:], 0x3f800000) // 1.0
	bf := []byte{0x80, 0x3f, 0x00, 0x40}               // bf16 1.0, 2.0
	i64 := make([]byte, 16)
	binary.LittleEndian.PutUint64(i64[8:], uint64(0xffffffffffffffff)) // -1
	in := []*Tensor{
		{Name: "a", DType: F32, Shape: []int{2, 3}, Data: f32},
		{Name: "b", DType: BF16, Shape: []int{2}, Data: bf},
		{Name: "c", DType: I64, Shape: []int{2}, Data: i64},
		{Name: "d", DType: BOOL, Shape: []int{}, Data: []byte{1}},
		// f16 1.0, −2.0 and the smallest subnormal 2⁻²⁴
		{Name: "e", DType: F16, Shape: []int{3}, Data: []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00}},
	}
	if err := Write(p, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Names(); strings.Join(got, ",") != "a,b,c,d,e" {
		t.Fatalf("names %v", got)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata)
	}
	a, _ := f.Tensor("a")
	av, _ := a.Float32s()
	if av[1] != 1 || len(av) != 6 {
		t.Errorf("a = %v", av)
	}
	b, _ := f.Tensor("b")
	bv, _ := b.Float32s()
	if bv[0] != 1 || bv[1] != 2 {
		t.Errorf("b = %v", bv)
	}
	e, _ := f.Tensor("e")
	ev, _ := e.Float32s()
	if ev[0] != 1 || ev[1] != -2 || ev[2] != 0x1p-24 {
		t.Errorf("e = %v", ev)
	}
	c, _ := f.Tensor("c")
	cv, _ := c.Int64s()
	if cv[1] != -1 {
		t.Errorf("c = %v", cv)
	}
	if _, err := f.Tensor("zz"); err == nil || !strings.Contains(err.Error(), "zz") || !strings.Contains(err.Error(), p) {
		t.Errorf("missing tensor error %v should name the tensor and the file", err)
	}
}

func TestParseRejects(t *testing.T) {
	body := make([]byte, 16)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "too short"},
		{"huge header", func() []byte { b := make([]byte, 16); binary.LittleEndian.PutUint64(b, 1<<40); return b }(), "limit"},
		{"header past end", func() []byte { b := make([]byte, 16); binary.LittleEndian.PutUint64(b, 100); return b }(), "past the end"},
		{"bad json", image(`{"a":`, body), "JSON"},
		{"dtype", image(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`, body), "F64"},
		{"span", image(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}}`, body), "needs 8 bytes"},
		{"outside", image(`{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}`, body), "outside"},
		{"negative", image(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, body), "negative"},
		{"overlap", image(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, body), "overlap"},
		{"giant shape", image(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, body), "larger than the file"},
		{"metadata", image(`{"__metadata__":{"a":1}}`, body), "__metadata__"},
	}
	for _, c := range cases {
		_, err := Parse("x.safetensors", c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.safetensors") {
			t.Errorf("%s: err %v, want one mentioning %q and the file", c.name, err, c.want)
		}
	}
}

func TestOpenTruncated(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.safetensors")
	if err := Write(p, []*Tensor{{Name: "w", DType: F32, Shape: []int{64}, Data: make([]byte, 256)}}, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p)
	if err == nil || !strings.Contains(err.Error(), `"w"`) {
		t.Fatalf("truncated file: %v (want an error naming tensor w)", err)
	}
	if _, err := Open(filepath.Join(dir, "absent.safetensors")); err == nil {
		t.Fatal("missing file opened")
	}
}

// FuzzParse: arbitrary bytes never panic, and anything accepted has every
// tensor inside the data section with the byte count its shape needs.
func FuzzParse(f *testing.F) {
	f.Add(image(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(image(`{"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		for _, n := range sf.Names() {
			tt, _ := sf.Tensor(n)
			if len(tt.Data) != tt.NumElements()*tt.DType.Size() {
				t.Fatalf("tensor %q: %d bytes for %v %s", n, len(tt.Data), tt.Shape, tt.DType)
			}
		}
	})
}
