package core

import "fmt"

// PeerError is the error of a rank whose run was stopped because another rank failed; its
// text is that rank's error, prefixed by its rank.
type PeerError struct{ Msg string }

func (e *PeerError) Error() string { return e.Msg }

// MismatchError says that the ranks of a run across processes were configured
// differently; every rank gets the same one.
type MismatchError struct {
	Key          string
	Mine, Theirs string
	Rank, Other  int
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("configuration differs between ranks: %s is %q on rank %d but %q on rank %d; "+
		"start every rank with the same flags and configuration file", e.Key, e.Mine, e.Rank, e.Theirs, e.Other)
}
