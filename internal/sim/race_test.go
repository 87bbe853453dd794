//go:build race

package sim

// raceEnabled scales the goal tests down under the race detector.
const raceEnabled = true
