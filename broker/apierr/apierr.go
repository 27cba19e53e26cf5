// Package apierr is the one error type that carries a Kafka error code and
// a message for the client, as Kafka's ApiException subclasses do. Inner
// packages (controller, coordinators, replica, log, config) return these,
// or errors wrapping a kerr sentinel; kapi turns them into codes and
// messages in one place (kapi.ErrorCode, kapi.ErrorMessage) with
// errors.As / errors.Is, defaulting to UNKNOWN_SERVER_ERROR.
package apierr

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a Kafka error code with the message a client sees in a
// response's error_message. It unwraps to the kerr sentinel, so
// errors.Is(err, kerr.X) works.
type Error struct {
	Code *kerr.Error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Code }

// Errorf returns an *Error with the formatted message.
func Errorf(code *kerr.Error, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// New returns an *Error with msg.
func New(code *kerr.Error, msg string) error { return &Error{Code: code, Msg: msg} }

// CodeOf returns the Kafka error of err: the kerr sentinel it wraps, or
// kerr.UnknownServerError; nil for nil.
func CodeOf(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// Code is CodeOf as a wire code: 0 for nil.
func Code(err error) int16 {
	if err == nil {
		return 0
	}
	return CodeOf(err).Code
}
