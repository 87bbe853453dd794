package strictjson

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type inner struct {
	Name string `json:"name"`
}

type doc struct {
	Version int     `json:"version"`
	Items   []inner `json:"items"`
	Any     any     `json:"any,omitempty"`
}

func TestUnmarshalAcceptsOneKnownValue(t *testing.T) {
	var d doc
	if err := Unmarshal([]byte(" {\"version\": 2, \"items\": [{\"name\": \"a\"}], \"any\": 7}\n\t"), &d); err != nil {
		t.Fatal(err)
	}
	want := doc{Version: 2, Items: []inner{{Name: "a"}}, Any: int64(7)}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		syntax    bool
		unknown   []string
		duplicate []string
	}{
		{name: "trailing value", in: `{"version":1} {"version":2}`, syntax: true},
		{name: "trailing closing brace", in: `{"version":1}}`, syntax: true},
		{name: "trailing closing bracket", in: `{"version":1}]`, syntax: true},
		{name: "trailing garbage", in: `{"version":1} x`, syntax: true},
		{name: "empty", in: ``, syntax: true},
		{name: "cut off", in: `{"version":1`, syntax: true},
		{name: "unknown top-level field", in: `{"version":1,"extra":true}`, unknown: []string{"extra"}},
		{name: "unknown nested field", in: `{"items":[{"name":"a","more":1}]}`, unknown: []string{"items[0].more"}},
		{name: "case mismatch", in: `{"Version":1}`, unknown: []string{"Version"}},
		{name: "nested case mismatch", in: `{"items":[{"NAME":"a"}]}`, unknown: []string{"items[0].NAME"}},
		{name: "duplicate key", in: `{"version":1,"version":2}`, duplicate: []string{"version"}},
		{name: "nested duplicate key", in: `{"items":[{"name":"a","name":"b"}]}`, duplicate: []string{"items[0].name"}},
		{name: "duplicate and unknown", in: `{"version":1,"version":2,"x":0}`, unknown: []string{"x"}, duplicate: []string{"version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			err := Unmarshal([]byte(tc.in), &d)
			if err == nil {
				t.Fatalf("Unmarshal(%s) accepted it: %+v", tc.in, d)
			}
			if tc.syntax {
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("Unmarshal(%s) = %v, want ErrSyntax", tc.in, err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Unmarshal(%s) = %v (%T), want a *FieldError", tc.in, err, err)
			}
			if diff := cmp.Diff(tc.unknown, fe.Unknown); diff != "" {
				t.Errorf("unknown (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.duplicate, fe.Duplicate); diff != "" {
				t.Errorf("duplicate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalDuplicateMapKey(t *testing.T) {
	var m map[string]json.RawMessage
	err := Unmarshal([]byte(`{"a":1,"a":2}`), &m)
	var fe *FieldError
	if !errors.As(err, &fe) || len(fe.Duplicate) != 1 || fe.Duplicate[0] != "a" {
		t.Fatalf("Unmarshal into a map = %v, want duplicate field \"a\"", err)
	}
}

func TestAllowUnknownFieldsKeepsTheOtherRules(t *testing.T) {
	var d doc
	if err := Unmarshal([]byte(`{"version":1,"runtimeKey":{"a":1}}`), &d, AllowUnknownFields); err != nil || d.Version != 1 {
		t.Fatalf("unknown key with AllowUnknownFields: %v, %+v", err, d)
	}
	var fe *FieldError
	err := Unmarshal([]byte(`{"version":1,"version":2,"other":0}`), &doc{}, AllowUnknownFields)
	if !errors.As(err, &fe) || !cmp.Equal(fe.Duplicate, []string{"version"}) || fe.Unknown != nil {
		t.Errorf("duplicate with AllowUnknownFields = %v, want only duplicate field \"version\"", err)
	}
	if err := Unmarshal([]byte(`{"version":1}]`), &doc{}, AllowUnknownFields); !errors.Is(err, ErrSyntax) {
		t.Errorf("trailing data with AllowUnknownFields = %v, want ErrSyntax", err)
	}
}

func TestTypeErrorIsEncodingJSONs(t *testing.T) {
	err := Unmarshal([]byte(`{"version":"one"}`), &doc{})
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		t.Fatalf("Unmarshal = %v (%T), want an *encoding/json.UnmarshalTypeError", err, err)
	}
	if te.Field != "version" || te.Value != "string" || te.Type.Kind().String() != "int" {
		t.Errorf("type error = %+v, want field version, value string, type int", *te)
	}
}

func TestSizeBound(t *testing.T) {
	in := []byte(`{"version":1}`)
	if err := UnmarshalLimit(in, len(in), &doc{}); err != nil {
		t.Errorf("UnmarshalLimit at the limit: %v", err)
	}
	if err := UnmarshalLimit(in, len(in)-1, &doc{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("UnmarshalLimit one byte over = %v, want ErrTooLarge", err)
	}
	if err := Read(strings.NewReader(string(in)), int64(len(in)), &doc{}); err != nil {
		t.Errorf("Read at the limit: %v", err)
	}
	if err := Read(strings.NewReader(string(in)), int64(len(in)-1), &doc{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read one byte over = %v, want ErrTooLarge", err)
	}
	if err := Read(strings.NewReader(`{"version":1}{}`), 100, &doc{}); !errors.Is(err, ErrSyntax) {
		t.Errorf("Read with trailing data = %v, want ErrSyntax", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.json")
	if err := os.WriteFile(p, []byte(`{"version":3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var d doc
	if err := ReadFile(p, 64, &d); err != nil || d.Version != 3 {
		t.Fatalf("ReadFile = %v, %+v", err, d)
	}
	if err := ReadFile(p, 4, &d); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over its bound = %v, want ErrTooLarge", err)
	}
	if err := ReadFile(filepath.Join(dir, "none"), 64, &d); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file = %v, want fs.ErrNotExist", err)
	}
	if err := ReadFile(dir, 64, &d); err == nil {
		t.Error("ReadFile of a directory succeeded")
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{`{"version":1}`, `{"items":[{"name":"a","name":"b"}]}`, `{"Version":1}]`, `[`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d doc
		err := Unmarshal(b, &d)
		if err == nil && !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		var fe *FieldError
		if errors.As(err, &fe) && len(fe.Unknown)+len(fe.Duplicate) == 0 {
			t.Fatalf("a FieldError naming no field for %q", b)
		}
	})
}
