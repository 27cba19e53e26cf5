package controller

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// Topic and partition decisions (Kafka's ReplicationControlManager):
// creation with Kafka's checks in Kafka's order, deletion, new partitions,
// and their placement over the registered brokers.

const (
	maxTopicNameLength = 249
	// maxPartitionsPerRequest bounds the partitions one request may
	// create (Kafka bounds the records of one controller operation to
	// 10000).
	maxPartitionsPerRequest = 10000
)

// CreateTopics creates topics, each independently: one's failure does not
// stop the others. ValidateOnly creates nothing and answers what would be.
func (c *QuorumController) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	resp, _, err := write(ctx, c, "createTopics", func(im *metadata.Image) (writeResult[*kmsg.CreateTopicsResponse], error) {
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		count := map[string]int{}
		for _, t := range req.Topics {
			count[t.Topic]++
		}
		d := metadata.NewDelta(im) // topics created so far in this request
		var recs []metadata.Record
		done := map[string]bool{}
		for _, rt := range req.Topics {
			if done[rt.Topic] {
				continue
			}
			done[rt.Topic] = true
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			var trecs []metadata.Record
			var err error
			if count[rt.Topic] > 1 {
				err = apierr.Errorf(kerr.InvalidRequest, "Duplicate topic name.")
			} else {
				trecs, err = c.createTopic(d, rt, &st)
			}
			if err == nil && req.ValidateOnly {
				st.TopicID = uuid.Zero
			}
			if err == nil && !req.ValidateOnly {
				for _, r := range trecs {
					if rerr := d.Replay(r); rerr != nil {
						err = apierr.Errorf(kerr.UnknownServerError, "controller: %v", rerr)
						break
					}
				}
			}
			if err != nil {
				st = kmsg.NewCreateTopicsResponseTopic()
				st.Topic = rt.Topic
				st.ErrorCode = apierr.Code(err)
				if req.Version >= 1 {
					st.ErrorMessage = errorMessage(err)
				}
			} else if !req.ValidateOnly {
				recs = append(recs, trecs...)
				c.log.Info("creating topic", "topic", rt.Topic, "partitions", st.NumPartitions, "replication_factor", st.ReplicationFactor)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return writeResult[*kmsg.CreateTopicsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

// createTopic checks one topic in Kafka's order (name, existence, configs,
// assignment or replication factor and partition count), places its
// partitions, fills st and returns the records.
func (c *QuorumController) createTopic(d *metadata.Delta, rt kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic) ([]metadata.Record, error) {
	name := rt.Topic
	if name == metadata.ClusterMetadataTopic {
		return nil, apierr.Errorf(kerr.InvalidRequest, "Creation of internal topic %s is prohibited.", name)
	}
	if err := ValidateTopicName(name); err != nil {
		return nil, err
	}
	if other, ok := collidingTopic(d, name); ok {
		return nil, apierr.Errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, other)
	}
	if d.TopicByName(name) != nil {
		return nil, apierr.Errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	configs := make(map[string]string, len(rt.Configs))
	var nulls []string
	for _, cf := range rt.Configs {
		if cf.Value == nil {
			nulls = append(nulls, cf.Name)
			continue
		}
		configs[cf.Name] = *cf.Value
	}
	if len(nulls) > 0 {
		return nil, apierr.Errorf(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(nulls, ","))
	}
	if err := c.cfg.Broker.ValidateTopicConfigs(configs); err != nil {
		return nil, err
	}
	im := d.Base()
	assignment, err := c.assignmentFor(im, name, rt)
	if err != nil {
		return nil, err
	}
	if err := c.checkPartitionCap(d, assignment); err != nil {
		return nil, err
	}
	id := uuid.Random()
	for {
		if _, used := im.TopicByID(id); !used {
			break
		}
		id = uuid.Random()
	}
	st.TopicID = id
	st.NumPartitions = int32(len(assignment))
	st.ReplicationFactor = int16(len(assignment[0]))
	for _, e := range c.cfg.Broker.DescribeTopic(configs, nil) {
		cf := kmsg.NewCreateTopicsResponseTopicConfig()
		cf.Name, cf.Value, cf.ReadOnly, cf.Source, cf.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.Sensitive
		st.Configs = append(st.Configs, cf)
	}
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicID: id}}
	for _, k := range slices.Sorted(mapsKeys(configs)) {
		v := configs[k]
		recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: name, Name: k, Value: &v})
	}
	precs, err := c.partitionRecords(im, id, 0, assignment)
	if err != nil {
		return nil, err
	}
	return append(recs, precs...), nil
}

// assignmentFor resolves a new topic's replica assignment: the manual one
// of the request, checked (Kafka's validateManualPartitionAssignment), or
// one placed over the registered brokers for its partition count and
// replication factor (-1: the broker defaults; an internal topic's capped
// to what the cluster holds).
func (c *QuorumController) assignmentFor(im *metadata.Image, name string, rt kmsg.CreateTopicsRequestTopic) ([][]int32, error) {
	var assignment [][]int32
	if len(rt.ReplicaAssignment) > 0 {
		if rt.ReplicationFactor != -1 {
			return nil, apierr.Errorf(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if rt.NumPartitions != -1 {
			return nil, apierr.Errorf(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		byIndex := map[int32][]int32{}
		for _, a := range rt.ReplicaAssignment {
			if _, dup := byIndex[a.Partition]; dup {
				return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
			}
			byIndex[a.Partition] = a.Replicas
		}
		if len(byIndex) > maxPartitionsPerRequest {
			return nil, apierr.Errorf(kerr.InvalidPartitions, "Cannot create more than %d partitions in one request.", maxPartitionsPerRequest)
		}
		for i := range int32(len(byIndex)) {
			r, ok := byIndex[i]
			if !ok {
				return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
			}
			assignment = append(assignment, r)
		}
		if err := c.validateAssignment(im, assignment, -1); err != nil {
			return nil, err
		}
	} else {
		partitions, rf := rt.NumPartitions, rt.ReplicationFactor
		switch {
		case rf < -1 || rf == 0:
			return nil, apierr.Errorf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		case partitions < -1 || partitions == 0:
			return nil, apierr.Errorf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		if partitions == -1 {
			partitions = c.cfg.Broker.NumPartitions
		}
		if rf == -1 {
			rf = c.cfg.Broker.DefaultReplicationFactor
		}
		if metadata.IsInternalTopic(name) {
			rf = c.internalReplicationFactor(rf)
		}
		if partitions > maxPartitionsPerRequest {
			return nil, apierr.Errorf(kerr.InvalidPartitions, "Cannot create more than %d partitions in one request.", maxPartitionsPerRequest)
		}
		if err := c.checkReplicationFactor(int(rf)); err != nil {
			return nil, err
		}
		var err error
		if assignment, err = placeReplicas(im, c.random(), int(partitions), int(rf)); err != nil {
			return nil, err
		}
	}
	return assignment, nil
}

// partitionRecords makes PartitionRecords for new partitions as Kafka's
// buildPartitionRegistration: the ISR is the replicas that are active
// (unfenced, not shutting down), the leader its first member, epochs 0,
// RECOVERED. A partition with no active replica is refused (placement
// always puts an active broker first, so only a manual assignment can).
func (c *QuorumController) partitionRecords(im *metadata.Image, id uuid.UUID, first int32, assignment [][]int32) ([]metadata.Record, error) {
	recs := make([]metadata.Record, 0, len(assignment))
	for i, replicas := range assignment {
		isr := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return !isActive(im, r) })
		if len(isr) == 0 {
			return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", first+int32(i))
		}
		recs = append(recs, &metadata.PartitionRecord{
			PartitionID: first + int32(i), TopicID: id,
			Replicas: slices.Clone(replicas), ISR: isr,
			RemovingReplicas: []int32{}, AddingReplicas: []int32{},
			Leader: isr[0], LeaderEpoch: 0, PartitionEpoch: 0,
		})
	}
	return recs, nil
}

// internalReplicationFactor is an internal topic's replication factor
// (offsets.topic.replication.factor, transaction.state.log.replication.factor).
// On combined nodes (process.roles broker,controller) it is capped to the
// size of the controller quorum as configured (controller.quorum.voters,
// else controller.quorum.bootstrap.servers), which there is the number of
// brokers the cluster is made of, so that a single node with no
// configuration creates __consumer_offsets. Otherwise, and above the cap,
// as Kafka: the creation fails (and FindCoordinator answers
// COORDINATOR_NOT_AVAILABLE, retried) until that many brokers are
// registered, so a cluster starting up does not get internal topics with
// fewer replicas than it will have. A controller-only quorum says nothing
// of how many brokers there are: one controller with three brokers gets
// the configured factor, not one.
func (c *QuorumController) internalReplicationFactor(rf int16) int16 {
	if b := c.cfg.Broker; b == nil || slices.Contains(b.ProcessRoles, "broker") {
		quorum := 1
		if b != nil {
			quorum = max(len(b.QuorumVoters), len(b.QuorumBootstrapServers), 1)
		}
		rf = min(rf, int16(quorum))
	}
	if c.cfg.MaxReplicationFactor > 0 && int(rf) > c.cfg.MaxReplicationFactor {
		rf = int16(c.cfg.MaxReplicationFactor)
	}
	return rf
}

// checkReplicationFactor refuses what partitions cannot yet be: replicas
// that would hold nothing because data is not copied between brokers.
func (c *QuorumController) checkReplicationFactor(rf int) error {
	if c.cfg.MaxReplicationFactor > 0 && rf > c.cfg.MaxReplicationFactor {
		return apierr.Errorf(kerr.InvalidReplicationFactor, "Replication factor %d is not supported yet: Moldau does not copy partition data between brokers, so every partition has exactly %d replica(s).", rf, c.cfg.MaxReplicationFactor)
	}
	return nil
}

// validateAssignment is Kafka's validateManualPartitionAssignment: every
// partition has replicas, on registered brokers, each at most once, and as
// many as the others (rf; -1: take the first partition's).
func (c *QuorumController) validateAssignment(im *metadata.Image, assignment [][]int32, rf int) error {
	for i, replicas := range assignment {
		if len(replicas) == 0 {
			return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
		}
		sorted := slices.Sorted(slices.Values(replicas))
		for j, b := range sorted {
			if im.Brokers[b] == nil {
				return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", b)
			}
			if j > 0 && sorted[j-1] == b {
				return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", b)
			}
		}
		if rf == -1 && i == 0 {
			rf = len(replicas)
		}
		if len(replicas) != rf {
			return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
		}
	}
	if len(assignment) > 0 {
		return c.checkReplicationFactor(len(assignment[0]))
	}
	return nil
}

// ValidateTopicName is Kafka's Topic.validate: non-empty, not "." or "..",
// at most 249 characters of ASCII letters, digits, '.', '_' and '-'.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return apierr.Errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return apierr.Errorf(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\"")
	case len(name) > maxTopicNameLength:
		return apierr.Errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return apierr.Errorf(kerr.InvalidTopicException, "Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// collidingTopic returns an existing topic whose name differs from name
// only by '.' versus '_' (Kafka's Topic.hasCollisionChars): both would
// have the same metric names.
func collidingTopic(d *metadata.Delta, name string) (string, bool) {
	if !strings.ContainsAny(name, "._") {
		return "", false
	}
	unify := func(s string) string { return strings.ReplaceAll(s, ".", "_") }
	u := unify(name)
	for _, t := range d.Base().Topics() {
		if t.Name != name && unify(t.Name) == u && d.TopicByName(t.Name) != nil {
			return t.Name, true
		}
	}
	for _, t := range d.CreatedTopics() {
		if t.Name != name && unify(t.Name) == u {
			return t.Name, true
		}
	}
	return "", false
}

// DeleteTopics deletes topics by name (v0-5) or by name or ID (v6+), with
// Kafka's errors for duplicates, unknown topics and disabled deletion.
func (c *QuorumController) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	resp, _, err := write(ctx, c, "deleteTopics", func(im *metadata.Image) (writeResult[*kmsg.DeleteTopicsResponse], error) {
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		targets := resolveDeleteTargets(im, req)
		var recs []metadata.Record
		for _, t := range targets {
			if t.err == nil && !c.cfg.Broker.DeleteTopicEnable {
				t.err = apierr.Errorf(kerr.TopicDeletionDisabled, "Topic deletion is disabled.")
				if req.Version < 3 {
					t.err = apierr.Errorf(kerr.InvalidRequest, "Topic deletion is disabled.")
				}
			}
			if t.err == nil {
				recs = append(recs, &metadata.RemoveTopicRecord{TopicID: t.id})
				c.log.Info("deleting topic", "topic", *t.name, "topic_id", t.id.String())
			}
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID = t.name, t.id
			rt.ErrorCode = apierr.Code(t.err)
			if req.Version >= 5 {
				rt.ErrorMessage = errorMessage(t.err)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return writeResult[*kmsg.DeleteTopicsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

type deleteTarget struct {
	name *string
	id   uuid.UUID
	err  error
}

// resolveDeleteTargets turns DeleteTopics' names and IDs into topics, as
// Kafka's broker and controller do between them (duplicates, a name and an
// ID of the same topic, unknown names and IDs).
func resolveDeleteTargets(im *metadata.Image, req *kmsg.DeleteTopicsRequest) []*deleteTarget {
	type ask struct {
		name *string
		id   uuid.UUID
	}
	var asks []ask
	if req.Version < 6 {
		for _, n := range req.TopicNames {
			asks = append(asks, ask{name: &n})
		}
	} else {
		for _, t := range req.Topics {
			asks = append(asks, ask{name: t.Topic, id: t.TopicID})
		}
	}
	nameCount := map[string]int{}
	idCount := map[uuid.UUID]int{}
	for _, a := range asks {
		switch {
		case a.name != nil && a.id.IsZero():
			nameCount[*a.name]++
		case a.name == nil && !a.id.IsZero():
			idCount[a.id]++
		}
	}
	var targets []*deleteTarget
	doneName := map[string]bool{}
	doneID := map[uuid.UUID]bool{}
	idOwner := map[uuid.UUID]*deleteTarget{}
	claim := func(t *metadata.Topic, nameAsked *string) {
		name := t.Name
		if nameAsked != nil {
			name = *nameAsked
		}
		if owner, dup := idOwner[t.ID]; dup {
			owner.err = apierr.Errorf(kerr.InvalidRequest, "The provided topic name maps to an ID that was already supplied.")
			targets = append(targets, &deleteTarget{name: &name, id: t.ID, err: owner.err})
			return
		}
		dt := &deleteTarget{name: &name, id: t.ID}
		idOwner[t.ID] = dt
		targets = append(targets, dt)
	}
	for _, a := range asks {
		switch {
		case a.name == nil && a.id.IsZero():
			targets = append(targets, &deleteTarget{err: apierr.Errorf(kerr.InvalidRequest, "Neither topic name nor id were specified.")})
		case a.name != nil && !a.id.IsZero():
			targets = append(targets, &deleteTarget{name: a.name, id: a.id, err: apierr.Errorf(kerr.InvalidRequest, "You may not specify both topic name and topic id.")})
		case a.name != nil:
			if doneName[*a.name] {
				continue
			}
			doneName[*a.name] = true
			if nameCount[*a.name] > 1 {
				targets = append(targets, &deleteTarget{name: a.name, err: apierr.Errorf(kerr.InvalidRequest, "Duplicate topic name.")})
				continue
			}
			t, ok := im.Topic(*a.name)
			if !ok {
				targets = append(targets, &deleteTarget{name: a.name, err: apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")})
				continue
			}
			claim(t, a.name)
		default:
			if doneID[a.id] {
				continue
			}
			doneID[a.id] = true
			if idCount[a.id] > 1 {
				targets = append(targets, &deleteTarget{id: a.id, err: apierr.Errorf(kerr.InvalidRequest, "Duplicate topic id.")})
				continue
			}
			t, ok := im.TopicByID(a.id)
			if !ok {
				targets = append(targets, &deleteTarget{id: a.id, err: apierr.Errorf(kerr.UnknownTopicID, "This server does not host this topic ID.")})
				continue
			}
			claim(t, nil)
		}
	}
	return targets
}

// CreatePartitions grows topics; each topic independently.
func (c *QuorumController) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	resp, _, err := write(ctx, c, "createPartitions", func(im *metadata.Image) (writeResult[*kmsg.CreatePartitionsResponse], error) {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		count := map[string]int{}
		for _, t := range req.Topics {
			count[t.Topic]++
		}
		var recs []metadata.Record
		done := map[string]bool{}
		for _, rt := range req.Topics {
			if done[rt.Topic] {
				continue
			}
			done[rt.Topic] = true
			var err error
			var trecs []metadata.Record
			if count[rt.Topic] > 1 {
				err = apierr.Errorf(kerr.InvalidRequest, "Duplicate topic name.")
			} else {
				trecs, err = c.createPartitions(im, rt)
			}
			if err == nil && !req.ValidateOnly {
				recs = append(recs, trecs...)
				c.log.Info("creating partitions", "topic", rt.Topic, "to", rt.Count)
			}
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			if err != nil {
				st.ErrorCode = apierr.Code(err)
				st.ErrorMessage = errorMessage(err)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return writeResult[*kmsg.CreatePartitionsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

func (c *QuorumController) createPartitions(im *metadata.Image, rt kmsg.CreatePartitionsRequestTopic) ([]metadata.Record, error) {
	t, ok := im.Topic(rt.Topic)
	if !ok {
		return nil, apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	}
	cur := int32(len(t.Partitions))
	switch {
	case rt.Count == cur:
		return nil, apierr.Errorf(kerr.InvalidPartitions, "Topic already has %d partition(s).", cur)
	case rt.Count < cur:
		return nil, apierr.Errorf(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, cur, rt.Count)
	case rt.Count-cur > maxPartitionsPerRequest:
		return nil, apierr.Errorf(kerr.InvalidPartitions, "Cannot create more than %d partitions in one request.", maxPartitionsPerRequest)
	}
	additional := rt.Count - cur
	rf := 1
	if cur > 0 {
		rf = len(t.Partitions[0].Replicas)
	}
	var assignment [][]int32
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != additional {
			return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			assignment = append(assignment, a.Replicas)
		}
		if err := c.validateAssignment(im, assignment, rf); err != nil {
			return nil, err
		}
	} else {
		var err error
		if assignment, err = placeReplicas(im, c.random(), int(additional), rf); err != nil {
			return nil, err
		}
	}
	if err := c.checkPartitionCap(metadata.NewDelta(im), assignment); err != nil {
		return nil, err
	}
	return c.partitionRecords(im, t.ID, cur, assignment)
}

// checkPartitionCap refuses new partitions that would put a broker over
// max.broker.partitions (POLICY_VIOLATION), counting the partitions of the
// image and of topics created earlier in the same request (d).
func (c *QuorumController) checkPartitionCap(d *metadata.Delta, assignment [][]int32) error {
	limit, source := c.cfg.Broker.MaxBrokerPartitions()
	adding := map[int32]int{}
	for _, replicas := range assignment {
		for _, b := range replicas {
			adding[b]++
		}
	}
	if len(adding) == 0 {
		return nil
	}
	hosted := map[int32]int{}
	count := func(t *metadata.Topic) {
		for _, p := range t.Partitions {
			for _, b := range p.Replicas {
				if _, ok := adding[b]; ok {
					hosted[b]++
				}
			}
		}
	}
	for _, t := range d.Base().Topics() {
		if d.TopicByName(t.Name) == t {
			count(t)
		}
	}
	for _, t := range d.CreatedTopics() {
		count(t)
	}
	for _, b := range slices.Sorted(mapsKeysInt(adding)) {
		if hosted[b]+adding[b] > limit {
			return apierr.Errorf(kerr.PolicyViolation, "Cannot place %d more partition(s) on broker %d: it hosts %d, and %s is %d.", adding[b], b, hosted[b], source, limit)
		}
	}
	return nil
}

func mapsKeysInt[V any](m map[int32]V) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// errorMessage is the client's error_message for err (nil for none).
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
