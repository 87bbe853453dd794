package benchplan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The default --network names a NetworkAttachmentDefinition that
// deploy/railyard-networks.yaml ships, in its namespace: a name alone
// would make Multus look in the benchmark pods' namespace (default) and
// find nothing.
func TestDefaultNetworkIsAShippedNAD(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "railyard-networks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shipped []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind == "NetworkAttachmentDefinition" {
			shipped = append(shipped, obj.Metadata.Namespace+"/"+obj.Metadata.Name)
		}
	}
	for _, nad := range shipped {
		if nad == DefaultNetwork {
			return
		}
	}
	t.Errorf("DefaultNetwork %q is none of the shipped NADs %v", DefaultNetwork, shipped)
}
