package cni

import (
	"errors"
	"fmt"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/state"
)

// codedError carries the CNI error code an error maps to.
type codedError struct {
	code uint
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func withCode(code uint, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

func invalidf(format string, args ...any) error {
	return withCode(types.ErrInvalidNetworkConfig, fmt.Errorf(format, args...))
}

// Code returns the CNI error code err maps to: the config error's own code,
// try-again-later (11) for a busy device, the code attached inside the
// plugin, else internal (999).
func Code(err error) uint {
	var te *types.Error
	if errors.As(err, &te) {
		return te.Code
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	var coded *codedError
	if errors.As(err, &coded) {
		return coded.code
	}
	if errors.Is(err, state.ErrBusy) {
		return types.ErrTryAgainLater
	}
	return types.ErrInternal
}

// ToCNIError converts err to the *types.Error printed on stdout.
func ToCNIError(err error) *types.Error {
	if err == nil {
		return nil
	}
	var te *types.Error
	if errors.As(err, &te) {
		return te
	}
	return types.NewError(Code(err), err.Error(), "")
}
