package bench

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/benchverify"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

// runVerify runs `bench verify` against client-go's fake clientset
// holding pods (whose logs the fake serves as the constant "fake logs":
// no NCCL line in them; internal/benchverify's tests serve real ones).
func runVerify(t *testing.T, pods []*corev1.Pod, args ...string) (string, string, error) {
	t.Helper()
	cs := fake.NewClientset()
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	newCmd := func(s iostreams.Streams) *cobra.Command {
		return newVerifyCommand(s, func(kubeconfig string, timeout time.Duration) (kubernetes.Interface, error) {
			if timeout <= 0 {
				t.Errorf("requests unbounded: timeout %v", timeout)
			}
			return cs, nil
		})
	}
	return clitest.Run(t, newCmd, "", args...)
}

func multusPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", Labels: map[string]string{"job-name": "train"},
			Annotations: map[string]string{benchverify.NetworkStatusAnnotation: `[{"name":"ml/rail0","interface":"net1","ips":["192.168.0.9"],` +
				`"device-info":{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:18:00.2","rdma-device":"mlx5_4","pf-pci-address":"0000:18:00.0"}}}]`}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "worker"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// Pods with Railyard devices but no NCCL line in their logs: the table
// names each pod's NIC, job-logs warns and the exit status is 1.
func TestVerifyWarnsWithoutNCCLLines(t *testing.T) {
	t.Parallel()
	out, _, err := runVerify(t, []*corev1.Pod{multusPod("train-0"), multusPod("train-1")}, "-n", "ml", "-l", "job-name=train")
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.ExitCode() != 1 {
		t.Fatalf("err %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"Job: 2 pods in ml matching job-name=train", "train-1", "mlx5_4 ?", "WARN  job-logs", "PASS  job-devices",
		"INFO  job-rails"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --json prints the report; the exit status is the same.
func TestVerifyJSON(t *testing.T) {
	t.Parallel()
	out, _, err := runVerify(t, []*corev1.Pod{multusPod("train-0")}, "-n", "ml", "-l", "job-name=train", "--json", "--log-bytes", "4Ki")
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.ExitCode() != 1 {
		t.Fatalf("err %v", err)
	}
	var rep benchverify.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Pods) != 1 || rep.Pods[0].NICs[0].PCI != "0000:18:00.2" || rep.Pods[0].Logs[0].Bytes != len("fake logs") || len(rep.Verdicts) == 0 {
		t.Errorf("report %+v", rep)
	}
}

// Bad flags fail before the cluster is read, naming the flag.
func TestVerifyFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--selector (-l) is required"},
		{[]string{"-l", "a=b", "-n", "Not_A_Namespace"}, "--namespace"},
		{[]string{"-l", "a=b", "--profile", "nope"}, "--profile"},
		{[]string{"-l", "a=b", "--log-bytes", "0"}, "--log-bytes"},
		{[]string{"-l", "a=b", "--log-bytes", "1024Mi"}, "--log-bytes"},
		{[]string{"-l", "a=b", "--request-timeout", "0s"}, "--request-timeout"},
		{[]string{"-l", "a=b"}, "no pod matches namespace default, selector a=b"},
	} {
		_, _, err := runVerify(t, nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
