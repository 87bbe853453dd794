package agent

import (
	"math"
	"time"
)

// staleAfter is how long after the last successful discovery /healthz
// still reports healthy: three resync periods and 30 s, saturating
// instead of overflowing (3 x 1000000h wrapped negative and failed
// /healthz right after start, so a liveness probe restarted the agent
// forever; validation now bounds resyncInterval to 24h, and this keeps
// any interval safe).
func staleAfter(resync time.Duration) time.Duration {
	const slack = 30 * time.Second
	if resync <= 0 {
		return slack
	}
	if resync > (math.MaxInt64-slack)/3 {
		return math.MaxInt64
	}
	return 3*resync + slack
}
