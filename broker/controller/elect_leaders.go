package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

// ElectLeaders (KIP-183, election types KIP-460) is Kafka's
// QuorumController.electLeaders with ReplicationControlManager.electLeaders:
//
//   - PREFERRED (0, the only type before v1): the partition's preferred
//     replica, the first of its assignment, becomes leader if it is in the
//     ISR and active (registered, unfenced, not shutting down). A
//     partition it already leads is ELECTION_NOT_NEEDED; one where it may
//     not lead is PREFERRED_LEADER_NOT_AVAILABLE (unless the current
//     leader may not lead either and another ISR member can: then that one
//     is elected, as Kafka's PartitionChangeBuilder does).
//   - UNCLEAN (1): only a partition without a leader is elected
//     (ELECTION_NOT_NEEDED otherwise): the first active ISR member, else
//     the first active replica outside the ISR, whatever the topic's
//     unclean.leader.election.enable says (asking is the operator's
//     consent); the ISR becomes just it and it is RECOVERING, as with any
//     unclean election. With no active replica: ELIGIBLE_LEADERS_NOT_AVAILABLE.
//   - Another type fails the request with INVALID_REQUEST.
//
// A null topic list elects every partition and answers only those that
// needed it (Kafka omits ELECTION_NOT_NEEDED there); an empty list does
// nothing. An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION. Each
// election is one PartitionChangeRecord (the leader epoch goes up), all in
// one batch, and the answer waits for their commit. timeout_ms is Kafka's
// deadline: the election must start and commit within it, else the
// request fails with REQUEST_TIMED_OUT (0 or less: at once).
func (c *QuorumController) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	if req.Topics != nil && len(req.Topics) == 0 {
		return req.ResponseKind().(*kmsg.ElectLeadersResponse), nil
	}
	if req.TimeoutMillis <= 0 {
		return nil, apierr.Errorf(kerr.RequestTimedOut, "The election's deadline (timeout_ms %d) passed before it started.", req.TimeoutMillis)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
	defer cancel()
	resp, _, err := write(ctx, c, "electLeaders", func(im *metadata.Image) (writeResult[*kmsg.ElectLeadersResponse], error) {
		if ctx.Err() != nil {
			return writeResult[*kmsg.ElectLeadersResponse]{}, apierr.Errorf(kerr.RequestTimedOut, "The election's deadline passed before it started.")
		}
		return c.electLeaders(im, req)
	})
	return resp, err
}

// Kafka's ElectionType.
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

func (c *QuorumController) electLeaders(im *metadata.Image, req *kmsg.ElectLeadersRequest) (writeResult[*kmsg.ElectLeadersResponse], error) {
	var none writeResult[*kmsg.ElectLeadersResponse]
	typ := req.ElectionType
	if req.Version == 0 {
		typ = electionPreferred
	}
	if typ != electionPreferred && typ != electionUnclean {
		return none, apierr.Errorf(kerr.InvalidRequest, "Unknown election type %d", typ)
	}
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	e := elector{c: c, im: im, typ: typ, changed: map[topicPartition]metadata.Partition{}}
	result := func(p int32, err error) kmsg.ElectLeadersResponseTopicPartition {
		sp := kmsg.NewElectLeadersResponseTopicPartition()
		sp.Partition, sp.ErrorCode = p, apierr.Code(err)
		if err != nil {
			msg := err.Error()
			sp.ErrorMessage = &msg
		}
		return sp
	}
	if req.Topics == nil {
		for _, t := range im.Topics() {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = t.Name
			for _, p := range t.Partitions {
				if err := e.elect(t.Name, p.Index); !errors.Is(err, kerr.ElectionNotNeeded) {
					st.Partitions = append(st.Partitions, result(p.Index, err))
				}
			}
			resp.Topics = append(resp.Topics, st)
		}
	} else {
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				st.Partitions = append(st.Partitions, result(p, e.elect(rt.Topic, p)))
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	return writeResult[*kmsg.ElectLeadersResponse]{records: e.records, resp: resp}, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// elector runs the elections of one request: a partition named twice is
// judged the second time as the first election left it.
type elector struct {
	c       *QuorumController
	im      *metadata.Image
	typ     int8
	changed map[topicPartition]metadata.Partition
	records []metadata.Record
}

// elect is Kafka's ReplicationControlManager.electLeader.
func (e *elector) elect(topic string, partition int32) error {
	t, ok := e.im.Topic(topic)
	if !ok {
		return apierr.Errorf(kerr.UnknownTopicOrPartition, "No such topic as %s", topic)
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return apierr.Errorf(kerr.UnknownTopicOrPartition, "No such partition as %s-%d", topic, partition)
	}
	key := topicPartition{topic, partition}
	p, ok := e.changed[key]
	if !ok {
		p = t.Partitions[partition]
	}
	if e.typ == electionPreferred && hasPreferredLeader(p) || e.typ == electionUnclean && p.Leader != metadata.NoLeader {
		return apierr.New(kerr.ElectionNotNeeded, "Leader election not needed for topic partition.")
	}
	var rec *metadata.PartitionChangeRecord
	if e.typ == electionPreferred {
		rec = e.c.preferredChange(e.im, t, p)
	} else {
		b := e.c.newChange(e.im, t, p, func(r int32) bool { return isActive(e.im, r) })
		b.unclean = true
		rec = e.c.buildChange(t, b)
	}
	if rec == nil {
		if e.typ == electionPreferred {
			return apierr.New(kerr.PreferredLeaderNotAvailable, "The preferred leader was not available.")
		}
		return apierr.New(kerr.EligibleLeadersNotAvailable, "Eligible topic partition leaders are not available.")
	}
	e.changed[key] = p.Merge(rec)
	e.records = append(e.records, rec)
	return nil
}

// hasPreferredLeader is Kafka's PartitionRegistration.hasPreferredLeader:
// the first replica leads.
func hasPreferredLeader(p metadata.Partition) bool {
	return len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
}

// preferredChange is Kafka's PartitionChangeBuilder with Election
// PREFERRED: the preferred replica leads if it may (it is active, and in
// the ISR, or in the ELR when the ISR is empty: Kafka's isValidNewLeader);
// else the election is an ONLINE one (the current leader stays if it may,
// else the first valid replica, else the last known leader). Nil when
// nothing changes.
func (c *QuorumController) preferredChange(im *metadata.Image, t *metadata.Topic, p metadata.Partition) *metadata.PartitionChangeRecord {
	if len(p.Replicas) == 0 {
		return nil
	}
	preferred := p.Replicas[0]
	acceptable := func(r int32) bool { return isActive(im, r) }
	valid := slices.Contains(p.ISR, preferred) || len(p.ISR) == 0 && im.ELREnabled() && slices.Contains(p.ELR, preferred)
	if valid && isActive(im, preferred) {
		// Only the preferred replica may lead: the ONLINE election
		// then elects it, the current leader notwithstanding.
		acceptable = func(r int32) bool { return r == preferred }
	}
	return c.buildChange(t, c.newChange(im, t, p, acceptable))
}
