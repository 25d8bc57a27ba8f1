//go:build !unix

// Package cputime reads the CPU time (user and system) this process and
// its waited-for children have used, for the benchmarks and the load
// generator, which report CPU per unit of work beside wall time.
package cputime

import "time"

// Self is not read here: 0.
func Self() time.Duration { return 0 }

// Children is not read here: 0.
func Children() time.Duration { return 0 }
