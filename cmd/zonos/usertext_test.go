package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestUserTextNamesNoGoAPI: what the CLI prints names commands, flags and
// files, not Go identifiers a user cannot act on ("pick another output
// device (ListDevices)", "see text.Languages"). It reads every string
// literal of the code behind the CLI's messages: package-qualified names
// anywhere, and the exported functions of the package the literal is in.
func TestUserTextNamesNoGoAPI(t *testing.T) {
	qualified := regexp.MustCompile(`\b(audio|text|engine|weights|speaker|compute|backend|zonos|dac|sample|cpu|gpu|bench)\.[A-Z]\w*`)
	for _, dir := range []string{".", "../../internal/bench", "../../internal/voices", "../../engine/text", "../../audio"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		fset := token.NewFileSet()
		var parsed []*ast.File
		var funcs []string
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			parsed = append(parsed, af)
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() {
					funcs = append(funcs, fd.Name.Name)
				}
			}
		}
		own := regexp.MustCompile(`\b(` + strings.Join(append(funcs, "NoSuchFunction"), "|") + `)\b`)
		for _, af := range parsed {
			ast.Inspect(af, func(n ast.Node) bool {
				bl, ok := n.(*ast.BasicLit)
				if !ok || bl.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(bl.Value)
				if err != nil {
					return true
				}
				if dir == "../../audio" && strings.Contains(s, "audio.Resampler.ResampleInto") {
					return true // a caller's programming error, never shown to a user
				}
				if m := qualified.FindString(s); m != "" {
					t.Errorf("%s: user-facing text names the Go API %s: %q", fset.Position(bl.Pos()), m, s)
				} else if m := own.FindString(s); m != "" {
					t.Errorf("%s: user-facing text names the Go function %s: %q", fset.Position(bl.Pos()), m, s)
				}
				return true
			})
		}
	}
}
