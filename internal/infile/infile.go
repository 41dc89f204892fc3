// Package infile reads the command's input files (a --config, a model's configuration) to
// a bound: a device such as /dev/zero given by mistake would otherwise be read forever.
package infile

import (
	"errors"
	"io"
	"os"
)

// ErrTooLarge is ReadAtMost's error for a file over its bound.
var ErrTooLarge = errors.New("over the size bound")

// ReadAtMost reads the file at path, failing with ErrTooLarge where it holds more than max
// bytes.
func ReadAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, ErrTooLarge
	}
	return data, nil
}
