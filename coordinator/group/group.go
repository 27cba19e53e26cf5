package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
)

// groupType is Kafka's Group.GroupType.
type groupType int8

const (
	typeClassic groupType = iota
	typeConsumer
	typeShare
)

func (t groupType) String() string {
	switch t {
	case typeConsumer:
		return "consumer"
	case typeShare:
		return "share"
	}
	return "classic"
}

// parseGroupType is GroupType.parse: case-insensitive; unknown is
// "unknown", which matches no group.
func parseGroupType(s string) (groupType, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "classic":
		return typeClassic, true
	case "consumer":
		return typeConsumer, true
	case "share":
		return typeShare, true
	}
	return 0, false
}

// group is what classic, consumer and share groups share (Kafka's Group).
type group interface {
	id() string
	kind() groupType
	// stateString is the state as DescribeGroups and ListGroups show it.
	stateString() string
	isEmpty() bool
	// validateOffsetCommit checks a commit's member, generation or epoch.
	validateOffsetCommit(memberID string, instanceID *string, generationOrEpoch int32, isTransactional bool, apiVersion int16) error
	validateOffsetFetch(memberID *string, memberEpoch int32) error
	validateOffsetDelete() error
	validateDeleteGroup() error
	// isSubscribedToTopic reports whether offsets of topic must not be
	// deleted or expired.
	isSubscribedToTopic(topic string) bool
	// offsetExpirationBase returns, if offsets of the group may expire,
	// the timestamp from which an offset's retention counts.
	offsetExpirationBase() (func(OffsetAndMetadata) int64, bool)
	// tombstones returns the records deleting the group (not its offsets).
	tombstones() []runtime.Record
	asListed() kmsg.ListGroupsResponseGroup
}
