package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The console's actions: what a person may do to the cluster from the
// details panel, each through the Kafka protocol as Kafka's own tools do
// it (see the package doc, "Actions").

// Action is one action taken (or refused) through POST /api/act/...: what
// the console writes to its log and hands Config.OnAction.
type Action struct {
	Kind   string `json:"kind"`   // partition, group, txn, broker
	Name   string `json:"name"`   // elect, delete-records, reset-offsets, delete, abort, alter-config
	Target string `json:"target"` // the partition (topic-N), group or transactional id
	OK     bool   `json:"ok"`
	Text   string `json:"text"`            // what was done, or why not
	Error  string `json:"error,omitempty"` // Kafka's error, by name, if the cluster answered with one
}

// ActResult is the answer of an action: what it did, in one line.
type ActResult struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// ActError is an action's failure: Kafka's error by name (NON_EMPTY_GROUP,
// NOT_LEADER_OR_FOLLOWER, ...) when the cluster answered with one, and a
// message saying what failed.
type ActError struct {
	Status  int    `json:"-"`
	Name    string `json:"error,omitempty"`
	Message string `json:"message"`
}

func (e *ActError) Error() string {
	if e.Name == "" {
		return e.Message
	}
	return e.Name + ": " + e.Message
}

// refused is a failure of the request itself (400) or of the state the
// action needs (409), with no Kafka error.
func refused(status int, format string, args ...any) *ActError {
	return &ActError{Status: status, Message: fmt.Sprintf(format, args...)}
}

// kafkaFailure names err's Kafka error, if it has one, in an ActError:
// 409 when the cluster refused the action, 504 when it did not answer in
// time, 502 otherwise (unreachable, a broker gone mid-request).
func kafkaFailure(what string, err error) *ActError {
	var ae *ActError
	if errors.As(err, &ae) {
		return ae
	}
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(se.Errs) > 0 {
		err = se.Errs[0].Err
	}
	e := &ActError{Status: http.StatusBadGateway, Message: what + ": " + errorText(err)}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		e.Name, e.Status = ke.Message, http.StatusConflict
		e.Message = what + ": " + ke.Description
		if ke == kerr.RequestTimedOut {
			e.Status = http.StatusGatewayTimeout
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.Status = http.StatusGatewayTimeout
	}
	return e
}

// withMessage puts the broker's own error message, when it sent one, in
// place of the error's generic description (INVALID_REQUEST's is about
// malformed requests; the broker's says which config is not dynamic).
func withMessage(e *ActError, what, msg string) *ActError {
	if msg != "" {
		e.Message = what + ": " + msg
	}
	return e
}

// admin is the poller's client now (SetClient may replace it).
func (p *Poller) admin() (*kgo.Client, *kadm.Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cl, p.adm
}

// ElectLeader runs a leader election of one partition (ElectLeaders, as
// kafka-leader-election.sh): preferred, or unclean (a leader from outside
// the ISR if no in-sync replica is alive, which may lose records). A
// partition whose preferred replica already leads, or that has a leader
// for an unclean election, answers ELECTION_NOT_NEEDED, which Kafka's
// tool counts as done.
func (p *Poller) ElectLeader(ctx context.Context, topic string, partition int32, unclean bool) (*ActResult, error) {
	_, adm := p.admin()
	how, name := kadm.ElectPreferredReplica, "preferred"
	if unclean {
		how, name = kadm.ElectLiveReplica, "unclean"
	}
	set := kadm.TopicsSet{}
	set.Add(topic, partition)
	rs, err := adm.ElectLeaders(ctx, how, set)
	if err != nil {
		return nil, kafkaFailure("ElectLeaders", err)
	}
	r, ok := rs[topic][partition]
	switch {
	case !ok:
		return nil, refused(http.StatusBadGateway, "ElectLeaders answered without %s-%d", topic, partition)
	case errors.Is(r.Err, kerr.ElectionNotNeeded):
		return &ActResult{OK: true, Message: fmt.Sprintf("%s election of %s-%d not needed (ELECTION_NOT_NEEDED): a valid replica already leads", name, topic, partition)}, nil
	case r.Err != nil:
		what := fmt.Sprintf("%s election of %s-%d", name, topic, partition)
		return nil, withMessage(kafkaFailure(what, r.Err), what, r.ErrMessage)
	}
	return &ActResult{OK: true, Message: fmt.Sprintf("%s election of %s-%d done", name, topic, partition)}, nil
}

// DeleteRecords deletes the records of a partition before offset
// (DeleteRecords, as kafka-delete-records.sh): the log start offset
// moves there. -1 is the high watermark (every record).
func (p *Poller) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (*ActResult, error) {
	if before < -1 {
		return nil, refused(http.StatusBadRequest, "offset %d: an offset is -1 (the high watermark) or above", before)
	}
	_, adm := p.admin()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: partition, At: before, LeaderEpoch: -1})
	rs, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		return nil, kafkaFailure("DeleteRecords", err)
	}
	r, ok := rs.Lookup(topic, partition)
	switch {
	case !ok:
		return nil, refused(http.StatusBadGateway, "DeleteRecords answered without %s-%d", topic, partition)
	case r.Err != nil:
		return nil, kafkaFailure(fmt.Sprintf("deleting the records of %s-%d", topic, partition), r.Err)
	}
	return &ActResult{OK: true, Message: fmt.Sprintf("records of %s-%d deleted: the log start offset is %d", topic, partition, r.LowWatermark)}, nil
}

// ResetRequest is the body of POST /api/act/group/reset-offsets: move
// group's committed offsets on topic (one partition, or -1 for every
// partition of the topic) to "earliest", "latest" or "offset" (Offset,
// kept within each partition's log as kafka-consumer-groups.sh
// --to-offset does).
type ResetRequest struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	To        string `json:"to"`
	Offset    int64  `json:"offset"`
}

// inactiveStates are the group states in which kafka-consumer-groups.sh
// resets offsets (ConsumerGroupCommand.resetOffsets).
var inactiveStates = map[string]bool{"Empty": true, "Dead": true}

// ResetOffsets commits new offsets for a group with no members
// (OffsetCommit with no generation, as Admin.alterConsumerGroupOffsets).
// As kafka-consumer-groups.sh, it first asks the group's state
// (ListGroups) and refuses unless it is Empty or Dead, with the tool's
// message; a member joining in between is refused by the coordinator
// (UNKNOWN_MEMBER_ID), which is answered by name. A group that does not
// exist is created with these offsets, as by the tool.
func (p *Poller) ResetOffsets(ctx context.Context, req ResetRequest) (*ActResult, error) {
	if req.Group == "" || req.Topic == "" || req.Partition < -1 {
		return nil, refused(http.StatusBadRequest, "name a group, a topic and a partition (-1: every partition of the topic)")
	}
	_, adm := p.admin()
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, kafkaFailure("ListGroups", err)
	}
	if g, ok := groups[req.Group]; ok && g.State != "" && !inactiveStates[g.State] {
		return nil, refused(http.StatusConflict, "Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", req.Group, g.State)
	}
	starts, err := adm.ListStartOffsets(ctx, req.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, kafkaFailure("ListOffsets (earliest)", err)
	}
	ends, err := adm.ListEndOffsets(ctx, req.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, kafkaFailure("ListOffsets (latest)", err)
	}
	offs := kadm.Offsets{}
	for part, end := range ends[req.Topic] {
		if req.Partition >= 0 && part != req.Partition {
			continue
		}
		start := starts[req.Topic][part].Offset
		at := start
		switch req.To {
		case "earliest":
		case "latest":
			at = end.Offset
		case "offset":
			at = min(max(req.Offset, start), end.Offset)
		default:
			return nil, refused(http.StatusBadRequest, "to %q: earliest, latest or offset", req.To)
		}
		offs.Add(kadm.Offset{Topic: req.Topic, Partition: part, At: at, LeaderEpoch: -1})
	}
	if len(offs) == 0 {
		return nil, refused(http.StatusNotFound, "no partition %d of topic %s", req.Partition, req.Topic)
	}
	rs, err := adm.CommitOffsets(ctx, req.Group, offs)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return nil, kafkaFailure(fmt.Sprintf("committing the offsets of group %s", req.Group), err)
	}
	var moved []string
	offs.Each(func(o kadm.Offset) { moved = append(moved, fmt.Sprintf("%s-%d at %d", o.Topic, o.Partition, o.At)) })
	slices.Sort(moved)
	return &ActResult{OK: true, Message: fmt.Sprintf("group %s reset to %s: %s", req.Group, req.To, strings.Join(moved, ", "))}, nil
}

// DeleteGroup deletes a group and its offsets (DeleteGroups, as
// kafka-consumer-groups.sh --delete); a group with members is refused by
// the coordinator with NON_EMPTY_GROUP.
func (p *Poller) DeleteGroup(ctx context.Context, group string) (*ActResult, error) {
	_, adm := p.admin()
	r, err := adm.DeleteGroup(ctx, group)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return nil, kafkaFailure("deleting group "+group, err)
	}
	return &ActResult{OK: true, Message: fmt.Sprintf("group %s deleted", group)}, nil
}

// AbortTransaction aborts the open transaction of transactional id txnID
// on each of its partitions, as `kafka-transactions.sh abort` does
// (TransactionsCommand, AbortTransactionHandler): DescribeTransactions
// gives the producer id and the partitions; on each, DescribeProducers
// (to the leader) gives that producer's epoch, the epoch of the
// coordinator of its last marker and the first offset of its open
// transaction; then WriteTxnMarkers to the leader appends an ABORT marker
// with them. The last stable offset then moves past the transaction. The
// coordinator is not told: it still holds the transaction, and ends it
// (fencing the producer) when it times out.
func (p *Poller) AbortTransaction(ctx context.Context, txnID string) (*ActResult, error) {
	cl, adm := p.admin()
	ds, err := adm.DescribeTransactions(ctx, txnID)
	if err != nil {
		return nil, kafkaFailure("DescribeTransactions", err)
	}
	d, ok := ds[txnID]
	switch {
	case !ok:
		return nil, refused(http.StatusBadGateway, "DescribeTransactions answered without %s", txnID)
	case d.Err != nil:
		return nil, kafkaFailure("describing transaction "+txnID, d.Err)
	case d.State == "PrepareCommit":
		// Its COMMIT markers are on their way: an ABORT on the
		// partitions still without one would split the transaction.
		return nil, refused(http.StatusConflict, "transaction %s is being committed (PrepareCommit): not aborting any of its partitions", txnID)
	case len(d.Topics) == 0:
		return nil, refused(http.StatusConflict, "transaction %s (%s) has no open partitions", txnID, d.State)
	}
	producers, err := adm.DescribeProducers(ctx, d.Topics)
	if err != nil {
		return nil, kafkaFailure("DescribeProducers", err)
	}
	var aborted, skipped []string
	for _, dp := range producers.SortedPartitions() {
		tp := fmt.Sprintf("%s-%d", dp.Topic, dp.Partition)
		if dp.Err != nil {
			return nil, kafkaFailure("DescribeProducers of "+tp, dp.Err)
		}
		pr, ok := dp.ActiveProducers[d.ProducerID]
		if !ok || pr.CurrentTxnStartOffset < 0 {
			skipped = append(skipped, tp)
			continue
		}
		if err := writeAbortMarker(ctx, cl, dp.Leader, pr); err != nil {
			return nil, kafkaFailure(fmt.Sprintf("WriteTxnMarkers (abort) to %s, leader %d", tp, dp.Leader), err)
		}
		aborted = append(aborted, fmt.Sprintf("%s from offset %d", tp, pr.CurrentTxnStartOffset))
	}
	if len(aborted) == 0 {
		return nil, refused(http.StatusConflict, "producer %d of transaction %s has no open transaction on %s", d.ProducerID, txnID, strings.Join(skipped, ", "))
	}
	msg := fmt.Sprintf("transaction %s (producer %d) aborted on %s", txnID, d.ProducerID, strings.Join(aborted, ", "))
	if len(skipped) > 0 {
		msg += "; nothing open on " + strings.Join(skipped, ", ")
	}
	return &ActResult{OK: true, Message: msg}, nil
}

// writeAbortMarker sends one WriteTxnMarkers with an ABORT marker for
// producer pr's transaction on its partition to the partition's leader:
// the producer's own epoch and, as Kafka's AbortTransactionHandler, the
// coordinator epoch of its last marker (0 if it has none), transaction
// version 0 (the marker's epoch is not bumped).
func writeAbortMarker(ctx context.Context, cl *kgo.Client, leader int32, pr kadm.DescribedProducer) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pr.ProducerID, pr.ProducerEpoch, false
	m.CoordinatorEpoch = max(pr.CoordinatorEpoch, 0)
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = pr.Topic, []int32{pr.Partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		return err
	}
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// AlterBrokerConfig sets (value non-nil) or deletes (nil: back to the
// static or default value) a dynamic configuration entry of broker id
// (IncrementalAlterConfigs, BROKER resource, as kafka-configs.sh
// --alter --entity-type brokers --entity-name ID). An entry that is not
// dynamic is refused by the broker, by name.
func (p *Poller) AlterBrokerConfig(ctx context.Context, id int32, name string, value *string) (*ActResult, error) {
	if name == "" || id < 0 {
		return nil, refused(http.StatusBadRequest, "name a broker and a configuration entry")
	}
	_, adm := p.admin()
	op := kadm.SetConfig
	if value == nil {
		op = kadm.DeleteConfig
	}
	what := fmt.Sprintf("altering %s of broker %d", name, id)
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: name, Value: value}}, id)
	if err != nil {
		return nil, kafkaFailure(what, err)
	}
	for _, r := range rs {
		if r.Err != nil {
			return nil, withMessage(kafkaFailure(what, r.Err), what, r.ErrMessage)
		}
	}
	if value == nil {
		return &ActResult{OK: true, Message: fmt.Sprintf("broker %d: %s deleted (back to its static or default value)", id, name)}, nil
	}
	return &ActResult{OK: true, Message: fmt.Sprintf("broker %d: %s set to %s", id, name, *value)}, nil
}

// actor is a source of snapshots that can act on the cluster (a Poller;
// a Replay cannot).
type actor interface {
	ElectLeader(ctx context.Context, topic string, partition int32, unclean bool) (*ActResult, error)
	DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (*ActResult, error)
	ResetOffsets(ctx context.Context, req ResetRequest) (*ActResult, error)
	DeleteGroup(ctx context.Context, group string) (*ActResult, error)
	AbortTransaction(ctx context.Context, txnID string) (*ActResult, error)
	AlterBrokerConfig(ctx context.Context, id int32, name string, value *string) (*ActResult, error)
}

// actBody is every action's JSON body; each action reads its fields.
type actBody struct {
	ResetRequest
	Type            string `json:"type"` // elect: preferred or unclean
	TransactionalID string `json:"transactional_id"`
	// alter-config: the broker, the entry's name and its value (null:
	// delete the dynamic value).
	Broker int32   `json:"broker"`
	Name   string  `json:"name"`
	Value  *string `json:"value"`
}

// act serves POST /api/act/{kind}/{name}. A JSON body only (as the dev
// API): a form posted by another site cannot reach it without a CORS
// preflight. 403 when the console is read-only or replays a run.
func (h *handler) act(w http.ResponseWriter, r *http.Request) {
	a := Action{Kind: r.PathValue("kind"), Name: r.PathValue("name")}
	ac, ok := h.src.(actor)
	switch {
	case !ok:
		WriteJSON(w, http.StatusForbidden, &ActError{Message: "a replay has no cluster to act on"})
		return
	case h.cfg.ReadOnly:
		WriteJSON(w, http.StatusForbidden, &ActError{Message: "the console is read-only (--read-only): no actions"})
		return
	case r.Header.Get("Content-Type") != "application/json":
		WriteJSON(w, http.StatusUnsupportedMediaType, &ActError{Message: "Content-Type must be application/json"})
		return
	}
	var body actBody
	body.Partition, body.Broker = -2, -1 // absent
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		WriteJSON(w, http.StatusBadRequest, &ActError{Message: "the body: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout())
	defer cancel()
	var res *ActResult
	var err error
	tp := fmt.Sprintf("%s-%d", body.Topic, body.Partition)
	switch a.Kind + "/" + a.Name {
	case "partition/elect":
		a.Target = tp
		if body.Type != "preferred" && body.Type != "unclean" {
			err = refused(http.StatusBadRequest, "type %q: preferred or unclean", body.Type)
		} else if err = needPartition(body); err == nil {
			res, err = ac.ElectLeader(ctx, body.Topic, body.Partition, body.Type == "unclean")
		}
	case "partition/delete-records":
		a.Target = tp
		if err = needPartition(body); err == nil {
			res, err = ac.DeleteRecords(ctx, body.Topic, body.Partition, body.Offset)
		}
	case "group/reset-offsets":
		a.Target = body.Group
		res, err = ac.ResetOffsets(ctx, body.ResetRequest)
	case "group/delete":
		a.Target = body.Group
		if body.Group == "" {
			err = refused(http.StatusBadRequest, "name the group")
		} else {
			res, err = ac.DeleteGroup(ctx, body.Group)
		}
	case "txn/abort":
		a.Target = body.TransactionalID
		if body.TransactionalID == "" {
			err = refused(http.StatusBadRequest, "name the transactional id")
		} else {
			res, err = ac.AbortTransaction(ctx, body.TransactionalID)
		}
	case "broker/alter-config":
		a.Target = fmt.Sprintf("broker %d %s", body.Broker, body.Name)
		res, err = ac.AlterBrokerConfig(ctx, body.Broker, body.Name, body.Value)
	default:
		WriteJSON(w, http.StatusNotFound, &ActError{Message: fmt.Sprintf("no action %s/%s: partition/elect, partition/delete-records, group/reset-offsets, group/delete, txn/abort, broker/alter-config", a.Kind, a.Name)})
		return
	}
	if err != nil {
		ae := kafkaFailure(a.Name, err)
		a.Text, a.Error = ae.Message, ae.Name
		h.logAction(r, a)
		WriteJSON(w, ae.Status, ae)
		return
	}
	a.OK, a.Text = true, res.Message
	h.logAction(r, a)
	WriteJSON(w, http.StatusOK, res)
}

func needPartition(b actBody) error {
	if b.Topic == "" || b.Partition < 0 {
		return refused(http.StatusBadRequest, "name a topic and a partition")
	}
	return nil
}

// logAction writes one line for every action, done or refused, and hands
// it to Config.OnAction.
func (h *handler) logAction(r *http.Request, a Action) {
	h.cfg.Logger.Info("console action", "kind", a.Kind, "action", a.Name, "target", a.Target, "ok", a.OK, "error", a.Error, "text", a.Text, "from", r.RemoteAddr)
	if h.cfg.OnAction != nil {
		h.cfg.OnAction(a)
	}
}

// timeout bounds one action: the poll timeout, at least 10 s (an
// election waits for the new leader to be in the metadata).
func (h *handler) timeout() time.Duration {
	return max(h.cfg.Timeout, 10*time.Second)
}
