package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/warpedgo/warped/internal/infile"
)

// The --config file (JSON flags that the command line overrides), and the flags every rank
// of a run across processes must agree on.

// agreed returns what every rank of a run across processes must share, by name: the
// model (compared first: with another model every flag would differ) and the flags.
func agreed(model string, fs *pflag.FlagSet) map[string]string {
	kv := map[string]string{"model": model}
	fs.VisitAll(func(f *pflag.Flag) {
		if !localFlags[f.Name] {
			kv["--"+f.Name] = f.Value.String()
		}
	})
	return kv
}

// applyConfigFile sets every flag named in the JSON object in path that the command line
// did not set.
func applyConfigFile(fs *pflag.FlagSet, path string) error {
	data, err := infile.ReadAtMost(path, maxConfigBytes)
	if errors.Is(err, infile.ErrTooLarge) {
		return fmt.Errorf("cannot read --config: %s is over %d MiB: not a configuration file", path, maxConfigBytes>>20)
	}
	if err != nil {
		return fmt.Errorf("cannot read --config: %w", err)
	}
	kv, err := decodeConfig(data)
	if err != nil {
		why := ""
		if strings.Contains(err.Error(), "invalid character '/'") {
			why = " (comments are not JSON, though WARPED2's reader takes them: remove them)"
		}
		return fmt.Errorf("--config %s is not a JSON object of flag names and values: %w%s", path, err, why)
	}
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if k, example, ok := nested(fs, keys, kv); ok {
		return fmt.Errorf("--config %s: key %q holds an object, as in WARPED2's nested layout; here the keys are the flags' names, flat: %s",
			path, k, example)
	}
	for _, k := range keys {
		if fs.Lookup(k) == nil || notInConfig[k] {
			return fmt.Errorf("--config %s: unknown key %q", path, k)
		}
		if set[k] {
			continue
		}
		var s string
		switch v := kv[k].(type) {
		case json.Number:
			s = v.String()
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		default:
			return fmt.Errorf("--config %s: key %q must be a number, string or boolean", path, k)
		}
		if err := fs.Set(k, flagWord(fs.Lookup(k), s)); err != nil {
			return fmt.Errorf("--config %s: key %q: %w", path, k, err)
		}
	}
	return nil
}

// nested reports the first of keys (sorted) whose value in kv is an object, as in
// WARPED2's nested configuration, and an example of the flat form: the first entry of such
// an object that is a flag here ("time-warp": {"worker-threads": 2} is
// "time-warp-worker-threads": 2), else a flag of the kernel's.
func nested(fs *pflag.FlagSet, keys []string, kv map[string]any) (key, example string, ok bool) {
	example = `"time-warp-worker-threads": 2`
	found := false
	for _, k := range keys {
		sub, isObject := kv[k].(map[string]any)
		if !isObject {
			continue
		}
		if !ok {
			key, ok = k, true
		}
		names := make([]string, 0, len(sub))
		for n := range sub {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if _, deeper := sub[n].(map[string]any); !found && !deeper && fs.Lookup(k+"-"+n) != nil {
				v, _ := json.Marshal(sub[n])
				example, found = fmt.Sprintf(`"%s-%s": %s`, k, n, v), true
			}
		}
	}
	return key, example, ok
}

// decodeConfig decodes data as exactly one JSON object, refusing a key given twice and
// anything after the object (a second object, trailing text), which would otherwise be
// dropped without a word.
func decodeConfig(data []byte) (map[string]any, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark, as some editors write
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil {
		return nil, err
	} else if t != json.Delim('{') {
		return nil, fmt.Errorf("it starts with %v, not {", t)
	}
	kv := map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("key %q given twice", k)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		kv[k] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more follows the object (at byte %d)", dec.InputOffset())
	}
	return kv, nil
}

// maxConfigBytes is the largest --config file: a configuration is a few hundred bytes, and
// a device such as /dev/zero given by mistake would be read forever.
const maxConfigBytes = 16 << 20
