package kernel

import (
	"fmt"
	"reflect"

	"github.com/warpedgo/warped/kernel/internal/canon"
)

// Plain gives an LP state saving for a plain struct: embed Plain[MyState] in the LP type and
// keep the state in the field S. The LP then has Snapshot, Restore and AppendState.
//
// T must be a plain value: no pointers, slices, maps, channels, functions or interfaces
// (strings and arrays are fine), because a snapshot is a shallow copy. dispatch.New checks
// this.
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
func (p *Plain[T]) AppendState(b []byte) []byte { return canon.AppendValue(b, &p.S) }

// plainType tells PlainState the state type of LPs that embed Plain.
func (p *Plain[T]) plainType() reflect.Type { return reflect.TypeFor[T]() }

type plainer interface{ plainType() reflect.Type }

// PlainState returns the type of the state that lp keeps in an embedded Plain, or nil when
// lp does not embed Plain. dispatch.New checks each such type with CheckPlainState.
func PlainState(lp LogicalProcess) reflect.Type {
	if p, ok := lp.(plainer); ok {
		return p.plainType()
	}
	return nil
}

// CheckPlainState reports why a state of type t cannot be saved by copying (Plain's rule:
// no pointers, slices, maps, channels, functions or interfaces), or nil when it can.
func CheckPlainState(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func,
		reflect.Interface, reflect.UnsafePointer:
		return fmt.Errorf("%s is a %s", t, t.Kind())
	case reflect.Array:
		return CheckPlainState(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if err := CheckPlainState(f.Type); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	}
	return nil
}
