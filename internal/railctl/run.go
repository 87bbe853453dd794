package railctl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// WebhookPath is where the webhook is served; HealthPath answers "ok".
const (
	WebhookPath = "/mutate-pods"
	HealthPath  = "/healthz"
)

// Config is what `railyard rails controller` runs.
type Config struct {
	Client kubernetes.Interface
	// Namespace is the controller's own (its Lease, its Service).
	Namespace string
	// LeaseName and Identity: the leader election's Lease and this
	// process' name in it (the pod name).
	LeaseName, Identity string
	// WebhookConfig is the MutatingWebhookConfiguration whose caBundle
	// the controller sets; Service the Service in Namespace the API
	// server calls it through.
	WebhookConfig, Service string
	// Listen is the HTTPS address (":8443").
	Listen string
	// Resync is the time between two passes of the leader's loop.
	Resync     time.Duration
	Controller *Controller
	Webhook    *Webhook
	Log        logr.Logger
}

// Lease timing: client-go's usual values.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// LeaderElection is the elector that runs lead while this process holds
// the Lease Namespace/LeaseName (coordination.k8s.io); the webhook is
// served by every replica, the loop only by the leader.
func LeaderElection(c Config, lead func(context.Context)) (*leaderelection.LeaderElector, error) {
	if c.Identity == "" || c.LeaseName == "" || c.Namespace == "" {
		return nil, errors.New("leader election needs a namespace, a lease name and an identity")
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaName(c.Namespace, c.LeaseName),
		Client:     c.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: c.LeaseName, ReleaseOnCancel: true,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: lead,
			OnStoppedLeading: func() { c.Log.Info("stopped leading", "lease", c.LeaseName) },
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return le, nil
}

// Run makes the webhook's certificates, sets the caBundle, serves the
// webhook over HTTPS and, while leading, runs the loop every Resync
// (re-setting the caBundle each time: a helm upgrade may clear it). It
// returns when ctx ends or the server fails.
func Run(ctx context.Context, c Config) error {
	certs, err := NewCerts(time.Now(), ServiceDNSNames(c.Service, c.Namespace))
	if err != nil {
		return err
	}
	if _, err := EnsureCABundle(ctx, c.Client, c.WebhookConfig, certs.CAPEM); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, c.Webhook)
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{
		Addr: c.Listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{certs.Serving}},
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", c.Listen, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	le, err := LeaderElection(c, func(ctx context.Context) { c.loop(ctx, certs.CAPEM) })
	if err != nil {
		_ = srv.Close()
		return err
	}
	leCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { le.Run(leCtx); close(done) }()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-served:
		err = fmt.Errorf("serving the webhook: %w", err)
	}
	cancel()
	<-done
	shut, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = srv.Shutdown(shut)
	return err
}

func (c Config) loop(ctx context.Context, caPEM []byte) {
	c.Log.Info("leading", "lease", c.LeaseName)
	t := time.NewTicker(c.Resync)
	defer t.Stop()
	for {
		if patched, err := EnsureCABundle(ctx, c.Client, c.WebhookConfig, caPEM); err != nil {
			c.Log.Error(err, "caBundle")
		} else if patched {
			c.Log.Info("caBundle set", "config", c.WebhookConfig)
		}
		if err := c.Controller.Reconcile(ctx); err != nil {
			c.Log.Error(err, "reconcile")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
