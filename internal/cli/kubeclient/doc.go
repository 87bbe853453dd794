// Package kubeclient loads the user's kubeconfig for the command line's
// verbs that talk to a cluster (bench run, fabric, rails), every request
// bounded: an API server that accepts the connection and never answers
// fails the request instead of hanging the command.
package kubeclient
