//go:build unix

// Package cputime reads the CPU time (user and system) this process and
// its waited-for children have used, for the benchmarks and the load
// generator, which report CPU per unit of work beside wall time.
package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time this process has used; 0 where it cannot be read.
func Self() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// Children is the CPU time of this process's children that have ended and
// been waited for.
func Children() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
