// Command railyard-agent is Railyard's node agent (a DaemonSet): it serves
// the node's RDMA devices to kubelet as device plugins. See docs/agent.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/railyard-io/railyard/internal/agent"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := agent.Run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "railyard-agent:", err)
		os.Exit(1)
	}
}
