//go:build !unix

package flock

import "os"

func lock(*os.File) error { return ErrUnsupported }
