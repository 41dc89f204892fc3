// Package canon is the result digest's encoding of a model's state: encoding/binary for
// fixed-size values, and otherwise a canonical walk (every field, maps sorted by key), so
// that equal states give equal bytes whatever their maps' iteration order.
package canon

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"slices"
)

// AppendValue appends a deterministic encoding of v (a pointer to the state): the
// encoding/binary form (little endian) for fixed-size types, and otherwise a canonical
// walk of the value in which map entries are sorted by their encoded keys.
func AppendValue(b []byte, v any) []byte {
	if binary.Size(v) >= 0 {
		if out, err := binary.Append(b, binary.LittleEndian, v); err == nil {
			return out
		}
	}
	return appendCanonical(b, reflect.ValueOf(v), 0)
}

// maxCanonicalDepth bounds the walk, so that a state with a pointer cycle cannot recurse
// forever; past it the walk writes a marker.
const maxCanonicalDepth = 64

// appendCanonical appends a canonical encoding of v: every field, exported or not, in
// declaration order; lengths before elements; map entries sorted by encoded key.
func appendCanonical(b []byte, v reflect.Value, depth int) []byte {
	if depth > maxCanonicalDepth {
		return append(b, "<too deep>"...)
	}
	switch v.Kind() {
	case reflect.Invalid:
		return append(b, 0)
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.LittleEndian.AppendUint64(b, uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.LittleEndian.AppendUint64(b, v.Uint())
	case reflect.Float32, reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(real(c)))
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(imag(c)))
	case reflect.String:
		b = binary.LittleEndian.AppendUint64(b, uint64(v.Len()))
		return append(b, v.String()...)
	case reflect.Array, reflect.Slice:
		b = binary.LittleEndian.AppendUint64(b, uint64(v.Len()))
		for i := range v.Len() {
			b = appendCanonical(b, v.Index(i), depth+1)
		}
		return b
	case reflect.Struct:
		for i := range v.NumField() {
			b = appendCanonical(b, v.Field(i), depth+1)
		}
		return b
	case reflect.Map:
		type kv struct{ k, v []byte }
		entries := make([]kv, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			entries = append(entries, kv{appendCanonical(nil, it.Key(), depth+1),
				appendCanonical(nil, it.Value(), depth+1)})
		}
		slices.SortFunc(entries, func(x, y kv) int { return bytes.Compare(x.k, y.k) })
		b = binary.LittleEndian.AppendUint64(b, uint64(len(entries)))
		for _, e := range entries {
			b = append(append(b, e.k...), e.v...)
		}
		return b
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, 0)
		}
		if v.Kind() == reflect.Interface {
			b = append(b, v.Elem().Type().String()...)
		}
		return appendCanonical(append(b, 1), v.Elem(), depth+1)
	}
	// Channels, functions and unsafe pointers carry no state worth digesting.
	return append(b, v.Kind().String()...)
}
