package v1alpha1

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// ErrInvalid is wrapped by every error Load returns for a file that was
// read but is not a valid configuration.
var ErrInvalid = errors.New("invalid agent configuration")

// Decode strictly decodes YAML or JSON (JSON is YAML): unknown or
// duplicate fields are errors. It neither defaults nor validates.
func Decode(data []byte) (*AgentConfig, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty document", ErrInvalid)
	}
	var c AgentConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &c, nil
}

// Parse decodes, defaults and validates a configuration document. On a
// validation failure the error lists every problem, one per line.
func Parse(data []byte) (*AgentConfig, error) {
	c, err := Decode(data)
	if err != nil {
		return nil, err
	}
	Default(c)
	if errs := Validate(c); len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n%s", ErrInvalid, FormatErrors(errs))
	}
	return c, nil
}

// Load reads and parses the configuration file at path.
func Load(path string) (*AgentConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading agent configuration: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// New returns a defaulted configuration without pools.
func New() *AgentConfig {
	c := &AgentConfig{}
	Default(c)
	return c
}
