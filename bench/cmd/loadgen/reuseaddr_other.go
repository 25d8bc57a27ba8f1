//go:build !unix

package main

import "syscall"

// reuseAddr: see reuseaddr_unix.go; elsewhere the kernel's rules apply.
func reuseAddr(_, _ string, _ syscall.RawConn) error { return nil }
