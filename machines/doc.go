// Package machines embeds Railyard's built-in machine models: descriptions
// of real GPU servers (copied from the project's shared machine
// descriptions, each value labelled published, inferred or synthetic with
// its source), so anyone can try Railyard without the hardware.
//
// A model becomes a topology by generating its fake sysfs tree
// (internal/fakesysfs) and discovering it (internal/discovery): the same code
// path a real node takes.
package machines
