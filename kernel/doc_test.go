package kernel

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kernelDoc returns package kernel's documentation as go doc reads it, and whether each
// type it declares is an alias, by name.
func kernelDoc(t *testing.T) (*doc.Package, map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var asts []*ast.File
	alias := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		require.NoError(t, err)
		asts = append(asts, f)
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				alias[ts.Name.Name] = ts.Assign.IsValid()
			}
			return true
		})
	}
	p, err := doc.NewFromFiles(fset, asts, "github.com/warpedgo/warped/kernel")
	require.NoError(t, err)
	return p, alias
}

// TestGoDocShowsTheAPI: the types a model uses are defined in package kernel, not aliased
// from the dispatchers' packages, so go doc shows their methods and fields (go doc ./kernel
// Context.Send): only the types of public packages (event, rng, comm) are aliases, and
// go doc shows every exported method of Context.
func TestGoDocShowsTheAPI(t *testing.T) {
	p, alias := kernelDoc(t)
	public := map[string]bool{"Time": true, "LPID": true, "Event": true, "Words": true, "RNG": true,
		"Poisson": true, "Registry": true}
	for name, isAlias := range alias {
		if ast.IsExported(name) {
			require.Equal(t, public[name], isAlias, "kernel.%s: an alias only for a public package's type", name)
		}
	}
	for _, name := range []string{"Context", "Config", "TimeWarpConfig", "LogicalProcess", "Stats",
		"Result", "Progress", "Sample", "SendError", "ModelPanicError"} {
		require.False(t, alias[name], "kernel.%s must be defined in package kernel", name)
	}
	shown := map[string]bool{}
	for _, ty := range p.Types {
		if ty.Name == "Context" {
			for _, m := range ty.Methods {
				shown[m.Name] = true
			}
		}
	}
	ct := reflect.TypeOf(&Context{})
	for i := range ct.NumMethod() {
		require.True(t, shown[ct.Method(i).Name], "go doc does not show Context.%s", ct.Method(i).Name)
	}
}
