package kubeclient

import (
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config loads kubeconfig (empty: KUBECONFIG, else ~/.kube/config) with
// each request bounded by timeout.
func Config(kubeconfig string, timeout time.Duration) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.Timeout = timeout
	return cfg, nil
}

// New is a clientset over Config.
func New(kubeconfig string, timeout time.Duration) (kubernetes.Interface, error) {
	cfg, err := Config(kubeconfig, timeout)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cs, nil
}
