//go:build !unix

package main

import (
	"errors"
	"io"
)

func faultcheckCmd(args []string, stdout, stderr io.Writer) error {
	return errors.New("faultcheck needs a Unix system (it stops and freezes processes with signals)")
}

func faultcheckWorkerCmd(args []string, stdout, stderr io.Writer) error {
	return faultcheckCmd(args, stdout, stderr)
}
