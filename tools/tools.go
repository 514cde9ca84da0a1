//go:build tools

// Package tools pins the programs that mediagw's tests build and run, outside the main module so
// that their dependencies stay out of it. The tests build them with
//
//	go build -o <dir> github.com/versity/versitygw/cmd/versitygw
//
// run from this directory.
package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
