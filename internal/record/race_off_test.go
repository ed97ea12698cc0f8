//go:build !race

package record

// raceOn: the race detector is on (sync.Pool then drops items on
// purpose, so allocation counts mean nothing).
const raceOn = false
