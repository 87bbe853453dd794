// Package agent is railyard-agent: it loads the configuration (flags >
// RAILYARD_* environment > config file > defaults), discovers the node,
// selects each pool's devices, serves every pool to kubelet as a device
// plugin, rediscovers on file-system events and periodically, re-registers
// when kubelet restarts, and serves /healthz and Prometheus /metrics.
package agent
