//go:build e2e

package framework

import (
	"fmt"
	"path/filepath"
	"time"
)

// StartHelper starts a program in the background (for example
// bin/railyard-agent), logging to <LogDir>/<name>.log. The cluster tracks it
// and stops it at teardown if the test has not; stop it earlier with
// StopHelper. name must be unique among running helpers.
func (c *Cluster) StartHelper(name, path string, args ...string) (*Process, error) {
	c.mu.Lock()
	_, running := c.procs[name]
	c.mu.Unlock()
	if running {
		return nil, fmt.Errorf("start helper %s: already running", name)
	}
	p, err := startProcess(name, path, args, nil, filepath.Join(c.cfg.LogDir, name+".log"))
	if err := c.track(name, p, err); err != nil {
		if p != nil {
			_ = p.Kill()
		}
		return nil, err
	}
	return p, nil
}

// StopHelper stops a helper started with StartHelper (SIGTERM, then SIGKILL
// after grace) and forgets it, so the same name can be started again.
func (c *Cluster) StopHelper(name string, grace time.Duration) error {
	c.mu.Lock()
	p, ok := c.procs[name]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("stop helper %s: not running", name)
	}
	if err := p.Stop(grace); err != nil {
		return fmt.Errorf("stop helper %s: %w", name, err)
	}
	c.mu.Lock()
	delete(c.procs, name)
	c.mu.Unlock()
	return nil
}
