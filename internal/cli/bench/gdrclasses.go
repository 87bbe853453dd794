package bench

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/benchplan"
)

// planGPUDirectClasses reads the near and far NICs' classes from a plan's
// GPUDirect pods (benchplan.LabelGPUDirectClass), as NEAR,FAR for
// --gpudirect-classes; nil when the plan has no GPUDirect pair (or its
// documents do not decode: benchrun.Load says why).
func planGPUDirectClasses(plan []byte) []string {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(plan)))
	var near, far string
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) || err != nil {
			break
		}
		var obj struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(doc, &obj) != nil {
			continue
		}
		l := obj.Metadata.Labels
		switch l[benchplan.LabelScenario] {
		case benchplan.ScenarioGPUDirectNear:
			near = l[benchplan.LabelGPUDirectClass]
		case benchplan.ScenarioGPUDirectFar:
			far = l[benchplan.LabelGPUDirectClass]
		}
	}
	if near == "" || far == "" {
		return nil
	}
	return []string{near, far}
}
