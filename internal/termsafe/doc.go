// Package termsafe makes text that came from elsewhere safe to print on a
// terminal: names and messages read from the cluster (labels, node and
// pod names, annotations), from switches (LLDP frames anyone on the link
// can send) or from another command's output. Escape turns every
// character that could move the cursor, recolour or retitle the
// terminal, reorder or hide text, or garble the line into a visible
// escape, and leaves everything else as it is.
//
// It is a leaf: the CLI and the libraries that put such text into their
// errors import it; it imports only the standard library.
package termsafe
