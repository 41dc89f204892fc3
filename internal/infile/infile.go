// Package infile reads the command's input files (a --config, a model's configuration) to
// a bound: a device such as /dev/zero given by mistake would otherwise be read forever.
package infile

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// ErrTooLarge is ReadAtMost's error for a file over its bound.
var ErrTooLarge = errors.New("over the size bound")

// Open opens the file at path for reading without waiting for a writer: a FIFO that no
// process has open for writing would otherwise block the open itself, where no stop signal
// reaches it; opened this way, reading it finds its end at once (POSIX: no writer, end of
// file), and a FIFO with a writer reads as it writes. Other files open as os.Open opens
// them.
func Open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// ReadAtMost reads the file at path (opened as Open does), failing with ErrTooLarge where
// it holds more than max bytes.
func ReadAtMost(path string, max int64) ([]byte, error) {
	f, err := Open(path)
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
