//go:build !race

package runtime

// raceOn: the race detector is on (sync.Pool then drops items on
// purpose).
const raceOn = false
