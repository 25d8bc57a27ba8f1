//go:build !race

package mockserver_test

// raceEnabled: the race detector is on (memory figures do not hold).
const raceEnabled = false
