package kernel

import (
	"fmt"
	"reflect"

	"github.com/warpedgo/warped/kernel/internal/core"
)

// Plain gives an LP state saving for a plain struct: embed Plain[MyState] in the LP type and
// keep the state in the field S. The LP then has Snapshot, Restore and AppendState.
//
// T must be a plain value: no pointers, slices, maps, channels, functions or interfaces
// (strings and arrays are fine), because a snapshot is a shallow copy. New checks this.
type Plain[T any] struct {
	// S is the LP's state.
	S T
}

// Snapshot copies S into dst (a *T from an earlier Snapshot, or nil) and returns it.
func (p *Plain[T]) Snapshot(dst any) any {
	d, _ := dst.(*T)
	if d == nil {
		d = new(T)
	}
	*d = p.S
	return d
}

// Restore sets S from a *T that Snapshot returned.
func (p *Plain[T]) Restore(src any) { p.S = *src.(*T) }

// AppendState appends S's bytes: encoding/binary (little endian) for fixed-size types, a
// canonical encoding (maps sorted by key) otherwise.
func (p *Plain[T]) AppendState(b []byte) []byte { return core.AppendValue(b, &p.S) }

// plainType lets New check the state type of LPs that embed Plain.
func (p *Plain[T]) plainType() reflect.Type { return reflect.TypeFor[T]() }

type plainer interface{ plainType() reflect.Type }

// checkPlain reports why t cannot be copied by assignment, or nil.
func checkPlain(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func,
		reflect.Interface, reflect.UnsafePointer:
		return fmt.Errorf("%s is a %s", t, t.Kind())
	case reflect.Array:
		return checkPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if err := checkPlain(f.Type); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	}
	return nil
}
