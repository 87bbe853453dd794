package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/inputfile"
	sigsjson "sigs.k8s.io/json"
)

// ErrTooLarge is returned (wrapped) for a document over its limit; it is
// inputfile.ErrTooLarge, so one check covers a file and a stream.
var ErrTooLarge = inputfile.ErrTooLarge

// ErrSyntax is returned (wrapped) for what is not one JSON value: a
// syntax error, a truncated document, or data after the value.
var ErrSyntax = errors.New("not one JSON value")

// FieldError lists the keys a strict decode refused, by path
// ("claims[0].uid"): keys no field knows (a case mismatch included) and
// keys given twice in one object.
type FieldError struct {
	Unknown   []string
	Duplicate []string
}

func (e *FieldError) Error() string {
	var parts []string
	for _, p := range e.Unknown {
		parts = append(parts, "unknown field "+strconv.Quote(p)+" (keys are case-sensitive)")
	}
	for _, p := range e.Duplicate {
		parts = append(parts, "duplicate field "+strconv.Quote(p))
	}
	return strings.Join(parts, ", ")
}

// Option relaxes one rule, at a call whose format needs it.
type Option int

const (
	// AllowUnknownFields accepts (and drops) keys no field knows: for a
	// format that carries other parties' keys beside ours. Duplicate
	// keys, trailing data and the size bound still fail, and a key in
	// the wrong case is then dropped as unknown.
	AllowUnknownFields Option = iota + 1
)

// Unmarshal decodes data, which must hold exactly one JSON value, into v
// strictly (see the package doc). On a *FieldError v holds what decoded.
func Unmarshal(data []byte, v any, opts ...Option) error {
	allowUnknown := false
	for _, o := range opts {
		if o == AllowUnknownFields {
			allowUnknown = true
		}
	}
	strict := []sigsjson.StrictOption{sigsjson.DisallowDuplicateFields}
	if !allowUnknown {
		strict = append(strict, sigsjson.DisallowUnknownFields)
	}
	problems, err := sigsjson.UnmarshalStrict(data, v, strict...)
	if err != nil {
		if ok, off := sigsjson.SyntaxErrorOffset(err); ok {
			return fmt.Errorf("%w: %w (offset %d)", ErrSyntax, err, off)
		}
		if te := typeError(err); te != nil {
			return te
		}
		return err
	}
	if len(problems) == 0 {
		return nil
	}
	return classify(data, v, problems, allowUnknown)
}

// typeError returns the decoder's type error (a value of the wrong JSON
// type for its field) as encoding/json's *UnmarshalTypeError, so that
// callers branch on it with errors.As as they would for encoding/json:
// sigs.k8s.io/json returns its internal copy of that type, whose fields
// are the same. nil for any other error.
func typeError(err error) *json.UnmarshalTypeError {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Elem().Type().Name() != "UnmarshalTypeError" {
		return nil
	}
	e := v.Elem()
	te := &json.UnmarshalTypeError{}
	value, typ, off, strct, field := e.FieldByName("Value"), e.FieldByName("Type"), e.FieldByName("Offset"), e.FieldByName("Struct"), e.FieldByName("Field")
	if value.Kind() != reflect.String || off.Kind() != reflect.Int64 || strct.Kind() != reflect.String || field.Kind() != reflect.String || !typ.IsValid() {
		return nil
	}
	te.Value, te.Offset, te.Struct, te.Field = value.String(), off.Int(), strct.String(), field.String()
	t, ok := typ.Interface().(reflect.Type)
	if !ok || t == nil {
		return nil
	}
	te.Type = t
	return te
}

// classify sorts the decoder's strict problems into unknown and duplicate
// keys. The decoder tells them apart only in its messages, so the
// duplicates are found by a second decode (into a fresh value of v's
// type) that checks duplicates alone: no message is parsed.
func classify(data []byte, v any, problems []error, allowUnknown bool) error {
	fe := &FieldError{}
	dups := map[string]bool{}
	if allowUnknown {
		for _, p := range problems {
			dups[path(p)] = true
		}
	} else {
		fresh := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		only, _ := sigsjson.UnmarshalStrict(data, fresh, sigsjson.DisallowDuplicateFields)
		for _, p := range only {
			dups[path(p)] = true
		}
	}
	for _, p := range problems {
		if dups[path(p)] {
			fe.Duplicate = append(fe.Duplicate, path(p))
		} else {
			fe.Unknown = append(fe.Unknown, path(p))
		}
	}
	return fe
}

func path(err error) string {
	var fe sigsjson.FieldError
	if errors.As(err, &fe) {
		return fe.FieldPath()
	}
	return err.Error()
}

// UnmarshalLimit is Unmarshal for data of at most max bytes: longer data
// fails with ErrTooLarge before any decoding.
func UnmarshalLimit(data []byte, max int, v any, opts ...Option) error {
	if len(data) > max {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, len(data), max)
	}
	return Unmarshal(data, v, opts...)
}

// Read reads r to its end, at most max bytes (one more fails with
// ErrTooLarge without reading further), and decodes it strictly into v.
func Read(r io.Reader, max int64, v any, opts ...Option) error {
	b, err := inputfile.ReadLimited(r, max)
	if err != nil {
		return err
	}
	return Unmarshal(b, v, opts...)
}

// ReadFile reads the regular file at path (inputfile.Read: at most max
// bytes, never blocking on a FIFO or a device) and decodes it strictly
// into v. A missing file keeps fs.ErrNotExist.
func ReadFile(path string, max int64, v any, opts ...Option) error {
	b, err := inputfile.Read(path, max)
	if err != nil {
		return err
	}
	if err := Unmarshal(b, v, opts...); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
