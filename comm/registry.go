// Package comm moves events between processes: the payload registry and the msgpack codec
// that turn events into bytes and back, the messages the ranks all-gather (wire.go: a lap
// of synchronous GVT, the final results), and the transports. It is the only package of
// the kernel's machinery that uses msgpack.
//
// Model payloads are plain Go values. To cross a process boundary a payload's type must be
// registered once, by a name that every process agrees on; the codec writes that name and
// the msgpack encoding of the value, and the receiving process rebuilds a value of the
// registered type.
package comm

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// Registry maps payload type names to Go types and back. Register everything before the
// run starts; after that a Registry is only read, so it may be shared by goroutines.
type Registry struct {
	byName map[string]reflect.Type
	byType map[reflect.Type]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]reflect.Type{}, byType: map[reflect.Type]string{}}
}

// Register records the type of example under name. Registering the same name and type
// twice is allowed; reusing a name for another type, or a type under another name, is an
// error. Payloads of pointer type are registered by their pointer type.
func (r *Registry) Register(name string, example any) error {
	if name == "" {
		return errors.New("register payload: empty name")
	}
	if example == nil {
		return fmt.Errorf("register payload %q: nil example; pass a value of the payload type", name)
	}
	t := reflect.TypeOf(example)
	if old, ok := r.byName[name]; ok && old != t {
		return fmt.Errorf("register payload %q: name already used for %s, cannot reuse it for %s", name, old, t)
	}
	if old, ok := r.byType[t]; ok && old != name {
		return fmt.Errorf("register payload %q: type %s is already registered as %q", name, t, old)
	}
	r.byName[name] = t
	r.byType[t] = name
	return nil
}

// Name returns the name under which v's type is registered.
func (r *Registry) Name(v any) (string, error) {
	t := reflect.TypeOf(v)
	name, ok := r.byType[t]
	if !ok {
		return "", fmt.Errorf("payload type %s is not registered; register it by name before the run", t)
	}
	return name, nil
}

// Len returns the number of registered payload types.
func (r *Registry) Len() int { return len(r.byName) }

// EncodePayload writes v as its registered name followed by its msgpack value. A nil
// payload is written as an empty name.
func (r *Registry) EncodePayload(enc *msgpack.Encoder, v any) error {
	if v == nil {
		return enc.EncodeString("")
	}
	name, err := r.Name(v)
	if err != nil {
		return err
	}
	if err := enc.EncodeString(name); err != nil {
		return err
	}
	return enc.Encode(v)
}

// DecodePayload reads what EncodePayload wrote and returns a value of the registered type.
func (r *Registry) DecodePayload(dec *msgpack.Decoder) (any, error) {
	name, err := dec.DecodeString()
	if err != nil {
		return nil, fmt.Errorf("decode payload name: %w", err)
	}
	if name == "" {
		return nil, nil
	}
	t, ok := r.byName[name]
	if !ok {
		return nil, fmt.Errorf("decode payload: unknown payload name %q; register it in every process", name)
	}
	p := reflect.New(t)
	if err := dec.DecodeValue(p.Elem()); err != nil {
		return nil, fmt.Errorf("decode payload %q: %w", name, err)
	}
	return p.Elem().Interface(), nil
}
