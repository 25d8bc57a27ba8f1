//go:build race

package bufpool

// raceEnabled: the race detector drops some of what sync.Pool is given,
// so a count of allocations means nothing under it.
const raceEnabled = true
