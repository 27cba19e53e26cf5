package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
)

var notCoordinatorCode = kerr.NotCoordinator.Code

func groupIDNotFound(id string) error {
	return apierr.Errorf(kerr.GroupIDNotFound, "Group %s not found.", id)
}

func joinError(memberID string, code int16) *kmsg.JoinGroupResponse {
	return &kmsg.JoinGroupResponse{ErrorCode: code, Generation: -1, MemberID: memberID, Members: []kmsg.JoinGroupResponseMember{}}
}

func syncError(code int16) *kmsg.SyncGroupResponse {
	return &kmsg.SyncGroupResponse{ErrorCode: code, MemberAssignment: []byte{}}
}

// operationError is Kafka's CoordinatorOperationExceptionHelper: the code
// and message a client gets when an operation failed, with the log's
// errors translated into coordinator errors the client knows to retry.
func operationError(err error) (*kerr.Error, *string) {
	code := apierr.CodeOf(err)
	switch code {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable, nil
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator, nil
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.UnknownServerError, nil
	}
	msg := err.Error()
	return code, &msg
}

// appendErrorToResponseError is Kafka's
// appendGroupMetadataErrorToResponseError (the same mapping, for errors
// of writing a classic group's metadata).
func appendErrorToResponseError(err error) int16 {
	code, _ := operationError(err)
	return code.Code
}

// errCode is the Kafka error code of err.
func errCode(err error) int16 { return apierr.CodeOf(err).Code }
