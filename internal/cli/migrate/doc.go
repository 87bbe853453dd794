// Package migrate is the `railyard migrate` command: `migrate sriovdp`
// converts the SR-IOV network device plugin's config.json into a
// railyard-agent configuration and prints, per resource and field, what
// changed and what could not be mapped. The conversion lives in
// internal/migrate; this package reads and writes files and sets the exit
// code (0 all mapped, 1 something dropped, 2 invalid input).
package migrate
