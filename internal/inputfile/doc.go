// Package inputfile is the one reader of files a user or another process
// hands Railyard: configurations, GPU maps, NCCL topology files, node
// policies, state records and views, host files under /proc, benchmark
// logs. Every such read is bounded (a size limit the caller names) and
// never blocks: the open is non-blocking and only regular files are read,
// so a FIFO, /dev/zero, a socket or a directory fails at once with
// ErrNotRegular instead of hanging or eating memory. Standard input, which
// is a pipe by nature, goes through ReadLimited.
//
// internal/sysfs keeps its own page-sized fast path for attributes (a
// discovery reads thousands) with the same two sentinel errors.
package inputfile
