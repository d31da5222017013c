package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestMessagesNameNoGoAPI: the text the window and the CLI show (every
// string literal in app's and audio's code, panics and String methods
// aside) never names one
// of their Go identifiers such as ListDevices or WAVPCM16: a user has no
// use for an API name; a message says what to do in their words.
func TestMessagesNameNoGoAPI(t *testing.T) {
	dirs := []string{".", "../audio"}
	fset := token.NewFileSet()
	var files []*ast.File
	exported := map[string]bool{}
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
			ast.Inspect(f, func(n ast.Node) bool {
				switch d := n.(type) {
				case *ast.FuncDecl:
					exported[d.Name.Name] = d.Name.IsExported()
				case *ast.TypeSpec:
					exported[d.Name.Name] = d.Name.IsExported()
				case *ast.ValueSpec:
					for _, id := range d.Names {
						exported[id.Name] = id.IsExported()
					}
				case *ast.Field:
					for _, id := range d.Names {
						exported[id.Name] = exported[id.Name] || id.IsExported()
					}
				}
				return true
			})
		}
	}
	// goName: a declared exported name that reads as code, not as a word
	// or an acronym (an upper-case letter after the first, and not all
	// capitals unless with digits: ListDevices, WAVPCM16, but not TTFA).
	goName := func(w string) bool {
		if !exported[w] || strings.ToUpper(w) == w && !strings.ContainsAny(w, "0123456789") {
			return false
		}
		for i, r := range w {
			if i > 0 && unicode.IsUpper(r) {
				return true
			}
		}
		return false
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ImportSpec, *ast.Field:
				return false // import paths, struct tags
			case *ast.FuncDecl:
				if x.Name.Name == "String" {
					return false // a Stringer names an invalid value as Go does: WAVFormat(7)
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "panic" {
					return false // a programming error, for the programmer
				}
			case *ast.BasicLit:
				if x.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(x.Value)
				if err != nil {
					return true
				}
				words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
				for _, w := range words {
					if goName(w) {
						t.Errorf("%s: message %q names the Go identifier %s", fset.Position(x.Pos()), s, w)
					}
				}
			}
			return true
		})
	}
}
