package apierr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestError(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", Errorf(kerr.InvalidTopicException, "topic %q is bad", "a b"))
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatal("errors.Is does not find the code")
	}
	if CodeOf(err) != kerr.InvalidTopicException {
		t.Fatalf("CodeOf = %v", CodeOf(err))
	}
	var ae *Error
	if !errors.As(err, &ae) || ae.Msg != `topic "a b" is bad` {
		t.Fatalf("As: %v", ae)
	}
	if CodeOf(errors.New("disk on fire")) != kerr.UnknownServerError || CodeOf(nil) != nil {
		t.Fatal("CodeOf default")
	}
}
