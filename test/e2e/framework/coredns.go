//go:build e2e

package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The cluster DNS: the kube-dns Service's ClusterIP (in serviceCIDR) and
// the domain every kubelet writes into its pods' resolv.conf.
const (
	clusterDNSIP  = "10.0.0.10"
	clusterDomain = "cluster.local"
)

// kubeletDNSConfig is the kubelet configuration that points pods at the
// cluster DNS.
const kubeletDNSConfig = "clusterDNS: [\"" + clusterDNSIP + "\"]\nclusterDomain: " + clusterDomain + "\n"

// corefile serves the cluster's Services and pods from the apiserver and
// answers nothing else: the machine may have no upstream resolver.
const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes ` + clusterDomain + ` in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`

// coreDNSObjects are what kubeadm installs for CoreDNS (its ServiceAccount,
// ClusterRole and binding, the Corefile, a Deployment behind the kube-dns
// Service in kube-system), with one difference: the container runs the
// static coredns binary of binDir, mounted from the host, in the busybox
// image every node has, so no registry and no image build is needed. It
// runs on the control-plane node (tolerating its taint).
func coreDNSObjects(binDir, node string) (*corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *corev1.ConfigMap, *appsv1.Deployment, *corev1.Service) {
	const ns, name = "kube-system", "coredns"
	labels := map[string]string{"k8s-app": "kube-dns"}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"Corefile": corefile}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            name,
					NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
					Tolerations:                   []corev1.Toleration{{Key: controlPlaneTaint.Key, Effect: controlPlaneTaint.Effect, Operator: corev1.TolerationOpExists}},
					DNSPolicy:                     corev1.DNSDefault,
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name:            name,
						Image:           BusyboxImage,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{"/coredns/coredns", "-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
							PeriodSeconds: 1,
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "bin", MountPath: "/coredns", ReadOnly: true},
							{Name: "config", MountPath: "/etc/coredns", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "bin", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: binDir, Type: ptr.To(corev1.HostPathDirectory)}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
					},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterDNSIP,
			Selector:  labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	return sa, role, binding, cm, dep, svc
}

// deployCoreDNS creates the cluster DNS and waits until its pod is ready.
func deployCoreDNS(ctx context.Context, c kubernetes.Interface, binDir, node string) error {
	sa, role, binding, cm, dep, svc := coreDNSObjects(filepath.Clean(binDir), node)
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster DNS: %s: %w", what, err)
		}
		return nil
	}
	for _, step := range []func() error{
		func() error {
			_, err := c.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
			return create("service account", err)
		},
		func() error {
			_, err := c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return create("cluster role", err)
		},
		func() error {
			_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return create("cluster role binding", err)
		},
		func() error {
			_, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
			return create("Corefile", err)
		},
		func() error {
			_, err := c.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
			return create("Service", err)
		},
		func() error {
			_, err := c.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{})
			return create("Deployment", err)
		},
	} {
		if err := step(); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		d, err := c.AppsV1().Deployments(dep.Namespace).Get(wctx, dep.Name, metav1.GetOptions{})
		if err == nil && d.Status.ReadyReplicas == 1 {
			return nil
		}
		select {
		case <-wctx.Done():
			last := "no ready replica"
			if err != nil {
				last = err.Error()
			}
			return fmt.Errorf("cluster DNS: CoreDNS not ready (last: %s): %w", last, wctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
