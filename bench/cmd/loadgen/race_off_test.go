//go:build !race

package main

// raceEnabled: the race detector is on (its instrumentation allocates).
const raceEnabled = false
