//go:build !linux

package main

// armParentDeathSignal: only Linux has a parent-death signal; elsewhere
// waitParentGone alone notices the parent's exit.
func armParentDeathSignal() error { return nil }
