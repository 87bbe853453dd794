// Package agent is railyard-agent: it loads the configuration (flags >
// RAILYARD_* environment > config file > defaults), discovers the node,
// selects each pool's devices, serves every devicePlugin pool to kubelet as
// a device plugin and every dra pool through its DRA kubelet plugin
// (internal/draplugin; an API server client is made only then),
// rediscovers on file-system events and periodically, re-registers when
// kubelet restarts, and serves /healthz and Prometheus /metrics.
package agent
