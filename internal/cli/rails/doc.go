// Package rails is `railyard rails template`: the ResourceClaimTemplate
// that gives every pod of a job the same rails (internal/jobrails), with
// the rail set chosen from the cluster's ResourceSlices and claims.
package rails
