package console

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/coordinator/group"
)

// The coordinators' logs a client may read, and what their records are.
// Each key opens with an int16: in __consumer_offsets the record type
// (0 and 1 an offset commit, 2 a group's metadata, 3 to 16 the KIP-848
// and share group records), in __transaction_state the key version (0).
// Each value opens with its own version. A record with a null value is a
// tombstone: the offset, group or transactional id was deleted.
const (
	offsetsTopic = "__consumer_offsets"
	txnTopic     = "__transaction_state"
)

// Kinds of InternalEvent.
const (
	kindOffsetCommit  = "offset commit"
	kindGroupMetadata = "group metadata"
	kindConsumerGroup = "consumer group"
	kindShareGroup    = "share group"
	kindTxnState      = "transaction state"
	kindOther         = "other"
)

// decodeInternal decodes one record of __consumer_offsets or
// __transaction_state into an event (Time, Topic, Partition and Offset
// are the caller's). Offset commits, classic group metadata and
// transaction state are read with kmsg's schemas, the KIP-848 and share
// group records (types 3 to 16) with the group coordinator's own
// (group.DescribeRecord), naming topic ids by names. It never fails:
// what it cannot read is an event of kind "other" saying why.
func decodeInternal(topic string, key, value []byte, names func(uuid.UUID) (string, bool)) InternalEvent {
	if len(key) < 2 {
		return InternalEvent{Kind: kindOther, Text: fmt.Sprintf("a key of %d bytes", len(key))}
	}
	r := kbin.Reader{Src: key}
	typ := r.Int16()
	var e InternalEvent
	var err error
	switch {
	case topic == offsetsTopic && (typ == 0 || typ == 1):
		e, err = decodeOffsetCommit(key, value)
	case topic == offsetsTopic && typ == 2:
		e, err = decodeGroupMetadata(key, value)
	case topic == txnTopic && typ == 0:
		e, err = decodeTxnState(key, value)
	case topic == offsetsTopic && typ >= 3 && typ <= 16:
		e, err = decodeGroupRecord(key, value, names)
	default:
		e = otherRecord(topic, typ, key, value)
	}
	if err != nil {
		return InternalEvent{Kind: kindOther, Text: fmt.Sprintf("type %d, %d bytes: %v", typ, len(key)+len(value), err)}
	}
	e.Deleted = value == nil
	return e
}

// readRecord reads a record's key into k and, unless the record is a
// tombstone, its value into v.
func readRecord(key, value []byte, k, v interface{ ReadFrom([]byte) error }) (tombstone bool, err error) {
	if err := k.ReadFrom(key); err != nil {
		return false, fmt.Errorf("%T: %w", k, err)
	}
	if value == nil {
		return true, nil
	}
	if err := v.ReadFrom(value); err != nil {
		r := kbin.Reader{Src: value}
		return false, fmt.Errorf("%T v%d: %w", v, r.Int16(), err)
	}
	return false, nil
}

func decodeOffsetCommit(key, value []byte) (InternalEvent, error) {
	k, v := kmsg.NewOffsetCommitKey(), kmsg.NewOffsetCommitValue()
	tombstone, err := readRecord(key, value, &k, &v)
	if err != nil {
		return InternalEvent{}, err
	}
	e := InternalEvent{Kind: kindOffsetCommit, Group: k.Group}
	where := fmt.Sprintf("group %s: %s-%d", k.Group, k.Topic, k.Partition)
	if tombstone {
		e.Text = where + " deleted"
		return e, nil
	}
	e.Text = fmt.Sprintf("%s at %d", where, v.Offset)
	if v.Version >= 3 && v.LeaderEpoch >= 0 {
		e.Text += fmt.Sprintf(" (leader epoch %d)", v.LeaderEpoch)
	}
	if v.Metadata != "" {
		e.Text += fmt.Sprintf(", metadata %q", v.Metadata)
	}
	return e, nil
}

func decodeGroupMetadata(key, value []byte) (InternalEvent, error) {
	k, v := kmsg.NewGroupMetadataKey(), kmsg.NewGroupMetadataValue()
	tombstone, err := readRecord(key, value, &k, &v)
	if err != nil {
		return InternalEvent{}, err
	}
	e := InternalEvent{Kind: kindGroupMetadata, Group: k.Group}
	if tombstone {
		e.Text = "group " + k.Group + " deleted"
		return e, nil
	}
	parts := []string{fmt.Sprintf("group %s: generation %d", k.Group, v.Generation)}
	if v.ProtocolType != "" {
		parts = append(parts, "protocol type "+v.ProtocolType)
	}
	if v.Protocol != nil {
		parts = append(parts, "protocol "+*v.Protocol)
	}
	if v.Leader != nil {
		parts = append(parts, "leader "+*v.Leader)
	}
	parts = append(parts, fmt.Sprintf("%d members", len(v.Members)))
	e.Text = strings.Join(parts, ", ")
	return e, nil
}

func decodeTxnState(key, value []byte) (InternalEvent, error) {
	k, v := kmsg.NewTxnMetadataKey(), kmsg.NewTxnMetadataValue()
	tombstone, err := readRecord(key, value, &k, &v)
	if err != nil {
		return InternalEvent{}, err
	}
	e := InternalEvent{Kind: kindTxnState, TransactionalID: k.TransactionalID}
	if tombstone {
		e.Text = "transactional id " + k.TransactionalID + " deleted"
		return e, nil
	}
	e.State = v.State.String()
	e.Text = fmt.Sprintf("transactional id %s: %s, producer %d epoch %d", k.TransactionalID, e.State, v.ProducerID, v.ProducerEpoch)
	var tps []string
	for _, t := range v.Topics {
		tps = append(tps, t.Topic+" "+fmt.Sprint(t.Partitions))
	}
	if len(tps) > 0 {
		e.Text += ", partitions " + strings.Join(tps, "; ")
	}
	return e, nil
}

func decodeGroupRecord(key, value []byte, names func(uuid.UUID) (string, bool)) (InternalEvent, error) {
	s, err := group.DescribeRecord(key, value, names)
	if err != nil {
		return InternalEvent{}, err
	}
	e := InternalEvent{Kind: kindConsumerGroup, Group: s.Group}
	if s.Share {
		e.Kind = kindShareGroup
	}
	who := "group " + s.Group
	if s.Member != "" {
		who += " member " + s.Member
		if s.Type == 16 {
			who = "group " + s.Group + " regex " + s.Member
		}
	}
	if value == nil {
		e.Text = fmt.Sprintf("%s: %s deleted", who, s.Name)
		return e, nil
	}
	e.Text = fmt.Sprintf("%s: %s, %s", who, s.Name, s.Text)
	return e, nil
}

// otherRecord is a record no schema here reads: its type, its value's
// version and its size.
func otherRecord(topic string, typ int16, key, value []byte) InternalEvent {
	e := InternalEvent{Kind: kindOther}
	size := fmt.Sprintf("%d bytes", len(key)+len(value))
	switch {
	case value == nil:
		e.Text = fmt.Sprintf("type %d deleted, %s", typ, size)
	case len(value) < 2:
		e.Text = fmt.Sprintf("type %d, %s", typ, size)
	default:
		r := kbin.Reader{Src: value}
		e.Text = fmt.Sprintf("type %d, version %d, %s", typ, r.Int16(), size)
	}
	return e
}
