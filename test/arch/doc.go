// Package arch holds the test that pins the rules of docs/architecture.md
// that imports can show: which packages may depend on which.
package arch
