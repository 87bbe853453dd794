package v1alpha1

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/strictjson"
)

// ErrInvalid is wrapped by every error Load returns for a file that was
// read but is not a valid configuration.
var ErrInvalid = errors.New("invalid agent configuration")

// Decode strictly decodes YAML or JSON (JSON is YAML): unknown or
// duplicate fields are errors, each named by its full path
// ("pools[1].selectors.vendorz"), and so is a file of several YAML
// documents (later documents used to be ignored without a word). It
// neither defaults nor validates.
func Decode(data []byte) (*AgentConfig, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty document", ErrInvalid)
	}
	doc, err := oneDocument(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	js, err := yaml.YAMLToJSONStrict(doc) // duplicate keys are errors here
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := checkDurations(js); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var c AgentConfig
	if err := strictjson.Unmarshal(js, &c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &c, nil
}

// durationType is the type of the configuration's duration fields.
var durationType = reflect.TypeFor[*metav1.Duration]()

// checkDurations parses the configuration's duration fields (every
// *metav1.Duration field of AgentConfig) of a JSON document, naming the
// field of a bad one: metav1.Duration's own error does not say which it is
// (an empty resyncInterval failed with just: time: invalid duration "").
func checkDurations(js []byte) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(js, &top) != nil {
		return nil // not an object: the strict decode says so
	}
	var errs []error
	t := reflect.TypeFor[AgentConfig]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		raw, ok := top[name]
		if f.Type != durationType || !ok || string(raw) == "null" {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s is not a duration string such as \"10s\"", name, raw))
			continue
		}
		if _, err := time.ParseDuration(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (a duration such as \"10s\")", name, err))
		}
	}
	return errors.Join(errs...)
}

// oneDocument returns the only YAML document of data; documents that are
// empty or only comments do not count.
func oneDocument(data []byte) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(d)
		if err == nil && (len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null") {
			continue // empty or comments only
		}
		docs = append(docs, d)
	}
	switch len(docs) {
	case 0:
		return nil, errors.New("empty document")
	case 1:
		return docs[0], nil
	}
	return nil, fmt.Errorf("%d YAML documents: the configuration is one document (remove the --- separators, or keep one configuration per file)", len(docs))
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

// MaxFileBytes bounds a configuration file (a real one is a few KiB).
const MaxFileBytes = 1 << 20

// ReadFile reads a configuration file: a regular file of at most
// MaxFileBytes (a FIFO or /dev/zero fails at once, never hangs or fills
// memory).
func ReadFile(path string) ([]byte, error) {
	data, err := inputfile.Read(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("reading agent configuration: %w", err)
	}
	return data, nil
}

// Load reads and parses the configuration file at path.
func Load(path string) (*AgentConfig, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
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
