//go:build !unix

package fileio

import "errors"

func mkfifo(path string) error { return errors.New("not supported") }
