//go:build !unix

package mockserver_test

import "time"

// processCPU is not measured here: the benchmarks report no CPU per op.
func processCPU() time.Duration { return 0 }
