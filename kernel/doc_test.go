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

	"github.com/warpedgo/warped/kernel/internal/core"
)

// kernelDocs returns the doc comment of every type that package kernel declares, by name.
func kernelDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var asts []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		require.NoError(t, err)
		asts = append(asts, f)
	}
	p, err := doc.NewFromFiles(fset, asts, "github.com/warpedgo/warped/kernel")
	require.NoError(t, err)
	docs := map[string]string{}
	for _, ty := range p.Types {
		docs[ty.Name] = ty.Doc
	}
	return docs
}

// TestContextDocNamesMethods: go doc cannot show the methods of kernel.Context, an alias of
// the dispatchers' type, so its doc lists them: every exported method, none left out.
func TestContextDocNamesMethods(t *testing.T) {
	d := kernelDocs(t)["Context"]
	ct := reflect.TypeOf(&Context{})
	for i := range ct.NumMethod() {
		m := ct.Method(i).Name
		require.Contains(t, d, "\t"+m+"(", "kernel.Context's doc must list its method %s", m)
	}
}

// TestAliasDocsNameFields: the docs of the configuration and result types that kernel
// re-exports name each of their exported fields.
func TestAliasDocsNameFields(t *testing.T) {
	docs := kernelDocs(t)
	for name, v := range map[string]any{"Config": Config{}, "TimeWarpConfig": TimeWarpConfig{},
		"Stats": Stats{}, "Progress": Progress{}, "Sample": Sample{}} {
		t.Run(name, func(t *testing.T) {
			ty := reflect.TypeOf(v)
			for i := range ty.NumField() {
				if f := ty.Field(i); f.IsExported() {
					require.Contains(t, docs[name], f.Name, "kernel.%s's doc must name field %s", name, f.Name)
				}
			}
		})
	}
}

// TestInterfacesAreTheDispatchers: the model interfaces that kernel defines (so that go doc
// shows their methods) have the dispatchers' method sets, both ways.
func TestInterfacesAreTheDispatchers(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[LogicalProcess](), reflect.TypeFor[core.LogicalProcess]()},
		{reflect.TypeFor[StateAppender](), reflect.TypeFor[core.StateAppender]()},
		{reflect.TypeFor[Reverser](), reflect.TypeFor[core.Reverser]()},
		{reflect.TypeFor[Reversible](), reflect.TypeFor[core.Reversible]()},
		{reflect.TypeFor[Lookahead](), reflect.TypeFor[core.Lookahead]()},
		{reflect.TypeFor[Batcher](), reflect.TypeFor[core.Batcher]()},
		{reflect.TypeFor[Committer](), reflect.TypeFor[core.Committer]()},
	} {
		require.True(t, pair[0].Implements(pair[1]) && pair[1].Implements(pair[0]), "%v and %v", pair[0], pair[1])
	}
}
