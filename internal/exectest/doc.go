// Package exectest writes executables that a test then runs, so that the
// run cannot fail with ETXTBSY ("text file busy").
//
// Linux refuses to execute a file that any process holds open for writing.
// A test that writes a script with os.WriteFile holds such a descriptor for
// a moment, and a child forked at that moment by any other goroutine of the
// test binary (a parallel test starting sh, ip or kubelet) inherits it
// until its own exec closes it. Executing the script in that window fails:
// a timing flake seen in CI (golang/go#22315). WriteExecutable has a child
// process write the file, so no descriptor of the test binary ever refers
// to it for writing, and it returns only after that child has exited.
package exectest
