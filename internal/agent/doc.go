// Package agent is railyard-agent: it loads the configuration (flags >
// RAILYARD_* environment > config file > defaults), discovers the node,
// selects each pool's devices, serves every devicePlugin pool to kubelet as
// a device plugin and every dra pool through its DRA kubelet plugin
// (internal/draplugin, with each NIC's leaf from a watch of its own Node),
// rediscovers on file-system events and periodically, re-registers when
// kubelet restarts, and serves /healthz and Prometheus /metrics (the RDMA
// counters' job_name from a watch of its node's pods where it has API
// credentials). A dra pool needs the API server; without one the agent
// makes a client only when given credentials.
package agent
