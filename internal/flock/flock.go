// Package flock takes advisory locks on files that the kernel releases
// when the process holding them ends, however it ends (kill -9 included).
// Trove uses them to tell the staging files of a live process from the
// leftovers of a dead one, so that leftovers can be removed at start-up
// without touching another process's uploads in progress.
//
// Locks are per open file: two TryLock calls on one path conflict even
// within one process. On systems without flock(2), TryLock returns
// ErrUnsupported and callers fall back to an age bound.
package flock

import (
	"errors"
	"os"
)

var (
	// ErrLocked means that another open file holds the lock.
	ErrLocked = errors.New("flock: the file is locked by another process or open file")
	// ErrUnsupported means that this system or filesystem cannot lock
	// files; nothing can then be said about the file's owner.
	ErrUnsupported = errors.New("flock: file locks are not supported here")
)

// TryLock opens path, creating it (mode 0600) if needed, and takes an
// exclusive lock on it without waiting. It returns the open file, which
// holds the lock until it is closed or the process ends; ErrLocked if
// another holder has it; ErrUnsupported if locks cannot be taken here.
func TryLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
