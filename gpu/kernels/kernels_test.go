package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPTXUpToDate fails when a .cu, or a header it includes, changed
// without regenerating its PTX: run `make kernels`.
func TestPTXUpToDate(t *testing.T) {
	srcs, _ := filepath.Glob("*.cu")
	if len(srcs) == 0 {
		t.Fatal("no .cu sources")
	}
	for _, cu := range srcs {
		mod := strings.TrimSuffix(cu, ".cu")
		h := sha256.New()
		files := append([]string{cu}, localHeaders(t, cu, map[string]bool{})...)
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(src)
		}
		want := hex.EncodeToString(h.Sum(nil))
		hopper, err := HopperPTX(mod)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := PTX(mod)
		for _, v := range []struct{ file, text string }{{mod + ".ptx", base}, {mod + ".sm90.ptx", hopper}} {
			if got := sourceHash(v.text); got != want {
				t.Errorf("%s was generated from other sources (header sha256 %q, sources %s %s): run `make kernels`",
					v.file, got, strings.Join(files, " + "), want)
			}
		}
	}
	if n, m := len(Modules()), len(srcs); n != m {
		t.Errorf("%d PTX modules embedded for %d .cu sources", n, m)
	}
}

// localHeaders lists the headers file includes with `#include "…"`, each
// followed by its own, depth first, skipping those in seen: the order in
// which gen.sh hashes them after the .cu.
func localHeaders(t *testing.T, file string, seen map[string]bool) []string {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(src), "\n") {
		rest, ok := strings.CutPrefix(line, `#include "`)
		if !ok || !strings.HasSuffix(rest, `"`) {
			continue
		}
		h := strings.TrimSuffix(rest, `"`)
		if seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, h)
		out = append(out, localHeaders(t, h, seen)...)
	}
	return out
}

// sourceHash is the source-sha256 a generated PTX text's header names.
func sourceHash(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "// ") {
			break
		}
		if rest, ok := strings.CutPrefix(line, "// source-sha256: "); ok {
			h, _, _ := strings.Cut(rest, " ")
			return h
		}
	}
	return ""
}

// TestHopperVariants: each module's compute_90 variant defines the same
// kernels as its portable one, targets sm_90, and every kernel outside
// timing.cu (whose clock kernels must not overlap anything) waits for its
// predecessor, so the backend launches all of them with PDL on Hopper.
func TestHopperVariants(t *testing.T) {
	for _, mod := range Modules() {
		hopper, err := HopperPTX(mod)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(hopper, "\n.target sm_90") {
			t.Errorf("%s.sm90.ptx does not target sm_90", mod)
		}
		var names []string
		for name := range entryBodies(hopper) {
			names = append(names, name)
		}
		base := Entries(mod)
		slices.Sort(names)
		slices.Sort(base)
		if !slices.Equal(names, base) {
			t.Errorf("%s: compute_90 kernels %v, compute_80 kernels %v", mod, names, base)
		}
		pdl := PDLEntries(mod)
		if mod == "timing" {
			if len(pdl) != 0 {
				t.Errorf("timing kernels %v wait for a predecessor", pdl)
			}
		} else if !slices.Equal(pdl, base) {
			t.Errorf("%s: kernels that wait %v, all kernels %v", mod, pdl, base)
		}
	}
}

// TestPDLWaitFirst: in every kernel launched with PDL, no instruction
// before the first griddepcontrol.wait touches memory other than its
// parameters and L2 prefetches (the previous kernel may still be running
// then: reading its output or writing anything would race).
func TestPDLWaitFirst(t *testing.T) {
	checked := 0
	for _, mod := range Modules() {
		hopper, _ := HopperPTX(mod)
		bodies := entryBodies(hopper)
		for _, name := range PDLEntries(mod) {
			if name == "pdl_probe_stamp" {
				continue // stamps its own probe slot before waiting, by design
			}
			// The GEMVs request their first weight stages (cp.async, or
			// cp.async.bulk) before waiting: weights are never written
			// while kernels run.
			early := strings.HasPrefix(name, "gemv_")
			// mamba_step_gated and mamba_step may load their SSM state
			// rows first (flags bit 0): only they write them, once per
			// step, so the kernel still running before them never does.
			stateFirst := strings.HasPrefix(name, "mamba_step")
			// mamba_run's producer warp streams weight rows and SSM state
			// rows (bulk copies) without waiting, and its consumers load
			// the first layer's conv state and small weights into shared
			// memory and registers: the weights are never written while
			// kernels run, and the states only by this kernel, once per
			// step (as mamba_step_gated's).
			run := name == "mamba_run" || name == "mamba_run_trace"
			early = early || run
			// attn_step reads the step's position (written by the
			// feedback kernel, which completed before its predecessor
			// waited) and computes its rotary angle first: the float64
			// trig's calls, stack and coefficient tables.
			angleFirst := strings.HasPrefix(name, "attn_step")
			checked++
			for _, line := range strings.Split(bodies[name], "\n") {
				ins := strings.TrimSpace(line)
				if strings.HasPrefix(ins, "griddepcontrol.wait") {
					break
				}
				if i := strings.IndexByte(ins, ' '); i > 0 && strings.HasPrefix(ins, "@") {
					ins = strings.TrimSpace(ins[i:]) // predicated instruction
				}
				for _, op := range []string{"ld.", "ldu.", "st.", "cp.", "atom.", "red.", "tex.", "tld4.", "suld.", "sust."} {
					if strings.HasPrefix(ins, op) && !strings.HasPrefix(ins, "ld.param") && !(early && strings.HasPrefix(ins, "cp.async")) &&
						!(stateFirst && strings.HasPrefix(ins, "ld.global.f32")) && !(angleFirst && angleLoad(ins)) &&
						!(run && (strings.HasPrefix(ins, "ld.global.") || strings.HasPrefix(ins, "st.shared."))) {
						t.Errorf("%s.%s: %q before griddepcontrol.wait", mod, name, ins)
					}
				}
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d PDL kernels checked", checked)
	}
}

// angleLoad: what attn_step may do before its wait: load the position
// (u32), the math library's coefficient tables (f64, non-coherent), its
// own stack, and pass call parameters.
func angleLoad(ins string) bool {
	for _, p := range []string{"ld.global.nc.u32", "ld.global.nc.f64", "ld.local.", "st.local.", "st.param."} {
		if strings.HasPrefix(ins, p) {
			return true
		}
	}
	return false
}

// TestKernelsUsedExist: every kernel the backend launches by name
// (b.k["name"] in ../*.go) is an entry of some module, so a kernel added
// to Go but missing from the PTX fails here instead of on the GPU.
func TestKernelsUsedExist(t *testing.T) {
	have := map[string]bool{}
	for _, m := range Modules() {
		for _, e := range Entries(m) {
			have[e] = true
		}
	}
	if !have["layernorm"] || !have["attn"] {
		t.Fatalf("Entries found %d kernels, not the known ones", len(have))
	}
	files, _ := filepath.Glob("../*.go")
	used := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(src), `b.k["`)[1:] {
			name := part[:strings.IndexByte(part, '"')]
			used++
			if !have[name] {
				t.Errorf("%s launches kernel %q, which no module defines (run make kernels?)", filepath.Base(f), name)
			}
		}
	}
	if used < 20 {
		t.Fatalf("found only %d kernel uses in ../*.go", used)
	}
}

// TestWideSmem: WideSmem, WbfSmem, TcqDeepSmem and WgSmem are what
// tc.cu's and wgmma.cu's defines compute, so the backend never launches
// tc_wide, tc_wbf, conv_tcq_n32_deep or tc_wg with less shared memory than
// it uses.
func TestWideSmem(t *testing.T) {
	src, err := os.ReadFile("tc.cu")
	if err != nil {
		t.Fatal(err)
	}
	def := map[string]int{}
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "#define" && (strings.HasPrefix(f[1], "TW_") || strings.HasPrefix(f[1], "WB_") || f[1] == "TCQ_DEEP_S" || f[1] == "CV_K") {
			expr := strings.Trim(f[2], "()")
			if n, err := strconv.Atoi(expr); err == nil {
				def[f[1]] = n
			} else if len(f) >= 5 && f[3] == "+" { // (TW_K + 8)
				a, _ := strconv.Atoi(strings.TrimSuffix(f[4], ")"))
				def[f[1]] = def[strings.TrimPrefix(f[2], "(")] + a
			}
		}
	}
	want := def["TW_STAGES"] * (def["TW_M"]*def["TW_LDA"]*4 + def["TW_N"]*def["TW_LDB"]*2)
	if want == 0 || want != WideSmem {
		t.Errorf("TW_SMEM from tc.cu is %d (defines %v), WideSmem %d", want, def, WideSmem)
	}
	wbf := def["TW_STAGES"]*(def["TW_M"]*def["WB_LDA"]*4+def["TW_N"]*def["TW_LDB"]*2) + 3*def["TW_M"]*def["WB_LDP"]*2
	if def["WB_LDA"] == 0 || def["WB_LDP"] == 0 || wbf != WbfSmem {
		t.Errorf("tc_wbf's shared memory from tc.cu is %d (defines %v), WbfSmem %d", wbf, def, WbfSmem)
	}
	if deep := def["TCQ_DEEP_S"] * (2048*4 + def["CV_K"]*40*4); def["CV_K"] == 0 || deep != TcqDeepSmem {
		t.Errorf("conv_tcq_n32_deep's shared memory from tc.cu is %d (defines %v), TcqDeepSmem %d", deep, def, TcqDeepSmem)
	}
	wg, err := os.ReadFile("wgmma.cu")
	if err != nil {
		t.Fatal(err)
	}
	wdef := map[string]int{}
	for _, line := range strings.Split(string(wg), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#define" && strings.HasPrefix(f[1], "WG_") {
			if n, err := strconv.Atoi(f[2]); err == nil {
				wdef[f[1]] = n
			}
		}
	}
	want = wdef["WG_STAGES"]*(wdef["WG_PARTS"]*wdef["WG_M"]*wdef["WG_ROW"]+wdef["WG_N"]*wdef["WG_ROW"]) + 1024
	if wdef["WG_ROW"] == 0 || wdef["WG_PARTS"] == 0 || want != WgSmem {
		t.Errorf("tc_wg's shared memory from wgmma.cu is %d (defines %v), WgSmem %d", want, wdef, WgSmem)
	}
}

// TestGatherCheck builds and runs check/gather_check.cu, a host program
// (no GPU needed) that compares conv_tcq's operands (ConvRowGather's input
// tiles and conv_prep_a's weight layout) with the direct definition for
// every thread, block and k step of many convolution geometries. It needs nvcc (Debian's nvidia-cuda-toolkit,
// which `make kernels` needs too) and skips without it; `make test` does
// not install it.
func TestGatherCheck(t *testing.T) {
	nvcc, err := exec.LookPath("nvcc")
	if err != nil {
		t.Skip("nvcc not installed")
	}
	bin := filepath.Join(t.TempDir(), "gather_check")
	cmd := exec.Command(nvcc, "-std=c++14", "-arch=sm_80", "-o", bin, "gather_check.cu")
	cmd.Dir = "check"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok:") {
		t.Fatalf("gather_check: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

// TestGemvChunkDefines: the backend launches the chunk GEMVs with the
// shared memory and grid of gemv.cu's GC_PIECES, GC_PLAIN, GC_BATCH and
// GC_PAIRS.
func TestGemvChunkDefines(t *testing.T) {
	src, err := os.ReadFile("gemv.cu")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"GC_PIECES": GemvChunkPieces, "GC_PLAIN": GemvPlainPieces, "GC_PAIRS": GemvPairs, "GC_BATCH": GemvBatchPieces} {
		found := false
		for _, line := range strings.Split(string(src), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "#define" && f[1] == name {
				found = true
				if n, err := strconv.Atoi(f[2]); err != nil || n != want {
					t.Errorf("gemv.cu %s = %s, Go expects %d", name, f[2], want)
				}
			}
		}
		if !found {
			t.Errorf("gemv.cu defines no %s", name)
		}
	}
}

// TestMambaRunDefines: the backend's mamba_run constants are mamba2.cu's,
// and its parameter struct has the size the backend fills (sm_90 PTX).
func TestMambaRunDefines(t *testing.T) {
	src, err := os.ReadFile("mamba2.cu")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"MR_STAGES": MambaRunStages, "MR_STAGE": MambaRunStage, "MR_MAXL": MambaRunMaxL,
		"MR_MAXROWS": MambaRunMaxRows, "MR_KC": MambaRunKc, "MR_P": MambaRunHeadDim, "MR_N": MambaRunDState, "MR_TRACE": MambaRunTrace}
	for _, line := range strings.Split(string(src), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#define" {
			if w, ok := want[f[1]]; ok {
				if n, err := strconv.Atoi(f[2]); err != nil || n != w {
					t.Errorf("mamba2.cu %s = %s, Go expects %d", f[1], f[2], w)
				}
				delete(want, f[1])
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("mamba2.cu does not define %v", want)
	}
	ptx, err := HopperPTX("mamba2")
	if err != nil {
		t.Fatal(err)
	}
	decl := fmt.Sprintf(".param .align 8 .b8 mamba_run_param_0[%d]", MambaRunArgBytes)
	if !strings.Contains(ptx, decl) {
		t.Errorf("mamba_run's parameter is not %q", decl)
	}
}
