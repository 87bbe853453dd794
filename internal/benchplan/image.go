package benchplan

import (
	"fmt"

	ggcrname "github.com/google/go-containerregistry/pkg/name"
)

// validateImage checks an image reference with the registry grammar
// (go-containerregistry's name.ParseReference): spaces, newlines, shell
// syntax such as "$(id)" and upper-case repositories are refused before
// they reach a pod spec. A reference without a registry or tag
// ("ubuntu") is accepted, as kubelet accepts it.
func validateImage(image string) error {
	if _, err := ggcrname.ParseReference(image); err != nil {
		return fmt.Errorf("%q: not an image reference: %w", image, err)
	}
	return nil
}
