package fakesysfs

import (
	"os"
	"path/filepath"
)

// WriteDevNodes creates <devRoot>/infiniband/ with an empty regular file
// standing in for the char device of every verbs device of the tree
// (uverbsN) and for rdma_cm, so code that hands out device nodes can check
// they exist. There is no RDMA hardware behind them; a container runtime
// needs real char devices (mknod), which the end-to-end suite makes.
func WriteDevNodes(root, devRoot string) error {
	ib := filepath.Join(devRoot, "infiniband")
	if err := os.MkdirAll(ib, 0o755); err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(root, "class/infiniband_verbs/uverbs*"))
	if err != nil {
		return err
	}
	for _, p := range append(names, "rdma_cm") {
		if err := os.WriteFile(filepath.Join(ib, filepath.Base(p)), nil, 0o600); err != nil {
			return err
		}
	}
	return nil
}
