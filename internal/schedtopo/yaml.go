package schedtopo

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// YAML writes objects as one YAML stream ("---" between documents), for
// kubectl apply -f -. The fields Kubernetes' own types write when unset
// (metadata.creationTimestamp: null, an empty status) are left out.
func YAML(objects ...any) ([]byte, error) {
	var out bytes.Buffer
	for i, o := range objects {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if md, ok := m["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
			delete(md, "creationTimestamp")
		}
		if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
			delete(m, "status")
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(y)
	}
	return out.Bytes(), nil
}
