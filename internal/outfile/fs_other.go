//go:build !linux

package outfile

import "golang.org/x/sys/unix"

// pseudoFS returns "": only Linux's pseudo file systems are told apart.
func pseudoFS(string) string { return "" }

// writable fails unless this process may create files in dir.
func writable(dir string) error { return unix.Access(dir, unix.W_OK) }
