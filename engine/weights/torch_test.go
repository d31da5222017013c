package weights

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func speakerTinyDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "..", "shared", "golden", "speaker-tiny")
	if g := os.Getenv("ZONOS_GOLDEN_DIR"); g != "" {
		d = filepath.Join(g, "speaker-tiny")
	}
	if _, err := os.Stat(d); err != nil {
		t.Skipf("golden pack speaker-tiny not found (%v): set ZONOS_GOLDEN_DIR", err)
	}
	return d
}

func TestOpenTorchSpeakerTiny(t *testing.T) {
	d := speakerTinyDir(t)
	f, err := OpenTorch(filepath.Join(d, "ResNet293_SimAM_ASP_base.pt"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 119 {
		t.Errorf("%d tensors, want 119", f.Len())
	}
	for _, n := range f.Names()[:5] {
		tt, _ := f.Tensor(n)
		t.Logf("%s %s %v %d", n, tt.DType, tt.Shape, len(tt.Data))
	}
}

// torchZip builds a torch.save-style archive from a pickle and records.
func torchZip(t testing.TB, pkl []byte, records map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, data []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	add("archive/data.pkl", pkl)
	for k, v := range records {
		add("archive/data/"+k, v)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stateDictPickle is protocol-2 pickle of {name: tensor} for one float32
// storage "0" of numel elements viewed with size and stride.
func stateDictPickle(name string, numel int, size, stride []int, storageClass string) []byte {
	var p bytes.Buffer
	p.WriteString("\x80\x02}q\x00(")
	p.WriteByte('X')
	binary.Write(&p, binary.LittleEndian, uint32(len(name)))
	p.WriteString(name)
	p.WriteString("ctorch._utils\n_rebuild_tensor_v2\n(")
	p.WriteString("(X\x07\x00\x00\x00storagectorch\n" + storageClass + "\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu")
	p.WriteByte('J')
	binary.Write(&p, binary.LittleEndian, int32(numel))
	p.WriteString("tQK\x00(")
	for _, s := range size {
		p.WriteByte('J')
		binary.Write(&p, binary.LittleEndian, int32(s))
	}
	p.WriteString("t(")
	for _, s := range stride {
		p.WriteByte('J')
		binary.Write(&p, binary.LittleEndian, int32(s))
	}
	p.WriteString("t\x89ccollections\nOrderedDict\n)RtRu.")
	return p.Bytes()
}

func f32bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func TestParseTorchSynthetic(t *testing.T) {
	data := torchZip(t, stateDictPickle("w", 6, []int{2, 3}, []int{3, 1}, "FloatStorage"), map[string][]byte{"0": f32bytes(1, 2, 3, 4, 5, 6)})
	f, err := ParseTorch("ok.pt", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	v, shape, err := f.Float32s("w", 2, 3)
	if err != nil || len(v) != 6 || v[5] != 6 || shape[1] != 3 {
		t.Fatalf("%v %v %v", v, shape, err)
	}
	if _, _, err := f.Float32s("w", 3, 2); err == nil {
		t.Error("wrong shape accepted")
	}
}

func TestParseTorchRejects(t *testing.T) {
	good := map[string][]byte{"0": f32bytes(1, 2, 3, 4, 5, 6)}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not-zip", []byte("PK\x03\x04 nonsense"), "not a torch.save zip"},
		{"evil-global", torchZip(t, []byte("\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsq\x00\x85R."), nil), "os.system is not allowed"},
		{"transposed", torchZip(t, stateDictPickle("w", 6, []int{2, 3}, []int{1, 2}, "FloatStorage"), good), "not contiguous"},
		{"too-big-view", torchZip(t, stateDictPickle("w", 6, []int{4, 3}, []int{3, 1}, "FloatStorage"), good), "its 6 elements"},
		{"numel-vs-record", torchZip(t, stateDictPickle("w", 600000000, []int{2, 3}, []int{3, 1}, "FloatStorage"), good), "the record holds 24"},
		{"double", torchZip(t, stateDictPickle("w", 3, []int{3}, []int{1}, "DoubleStorage"), good), "torch.DoubleStorage is not allowed"},
		{"missing-record", torchZip(t, stateDictPickle("w", 6, []int{6}, []int{1}, "FloatStorage"), nil), "no record"},
		{"huge-length", torchZip(t, []byte("\x80\x02X\xff\xff\xff\x7f."), nil), "declares"},
		{"no-stop", torchZip(t, []byte("\x80\x02}q\x00"), nil), "no STOP"},
		{"not-dict", torchZip(t, []byte("\x80\x02K\x05."), nil), "not a state dict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTorch(tc.name+".pt", bytes.NewReader(tc.data), int64(len(tc.data)))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name+".pt") {
				t.Errorf("error %q does not name the file and %q", err, tc.want)
			}
		})
	}
}

func FuzzParseTorch(f *testing.F) {
	f.Add(torchZip(f, stateDictPickle("w", 6, []int{2, 3}, []int{3, 1}, "FloatStorage"), map[string][]byte{"0": f32bytes(1, 2, 3, 4, 5, 6)}))
	{
		if b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "golden", "speaker-tiny", "ResNet293_SimAM_ASP_base_LDA-128.pt")); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := ParseTorch("fuzz.pt", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, n := range tf.Names() {
			tt, _ := tf.Tensor(n)
			if len(tt.Data) != tt.NumElements()*tt.DType.Size() {
				t.Fatalf("tensor %s: %d bytes for %v %s", n, len(tt.Data), tt.Shape, tt.DType)
			}
		}
	})
}
