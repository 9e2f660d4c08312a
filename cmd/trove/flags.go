package main

import (
	"errors"
	"flag"
	"os"

	"trove.dev/trove/internal/registry"
)

// checkKeyword returns the message of parse's error for the flag value v
// as a plain error (a flag.Value's Set error, which the command answers as
// a usage error), or nil when v parses.
func checkKeyword[T any](parse func(string) (T, error), v string) error {
	if _, err := parse(v); err != nil {
		return errors.New(registry.Message(err))
	}
	return nil
}

// textFlag defines a flag of free text checked with limit.CheckText when
// it is set, so that a description the server would refuse is a usage
// error before any request. It returns the value and whether it was set.
func textFlag(fs *flag.FlagSet, name, usage string, limit registry.Limit) (*string, *bool) {
	var value string
	var set bool
	fs.Func(name, usage, func(v string) error {
		value, set = v, true
		return checkKeyword(func(s string) (struct{}, error) { return struct{}{}, limit.CheckText(s) }, v)
	})
	return &value, &set
}

// checkDir returns an error that says what to do when dir is not a
// directory.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New(dir + " does not exist: give the directory the executables were built into")
	case err != nil:
		return err
	case !fi.IsDir():
		return errors.New(dir + " is not a directory: give the directory the executables were built into, or a single executable with --binary OS_ARCH=FILE")
	}
	return nil
}
