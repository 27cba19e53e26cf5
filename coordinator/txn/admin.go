package txn

import (
	"errors"
	"regexp"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// DescribeTransactions describes transactional ids coordinated here
// (Kafka's handleDescribeTransactions): NOT_COORDINATOR for an id of
// another broker, TRANSACTIONAL_ID_NOT_FOUND for one that is not known,
// INVALID_REQUEST for an empty one. done gets one state per id, in order.
func (s *Service) DescribeTransactions(ids []string, done func([]kmsg.DescribeTransactionsResponseTransactionState)) {
	out := make([]kmsg.DescribeTransactionsResponseTransactionState, len(ids))
	if len(ids) == 0 {
		done(out)
		return
	}
	var mu sync.Mutex
	left := len(ids)
	finish := func(i int, st kmsg.DescribeTransactionsResponseTransactionState) {
		mu.Lock()
		out[i] = st
		left--
		last := left == 0
		mu.Unlock()
		if last {
			done(out)
		}
	}
	for i, id := range ids {
		errState := func(err error) kmsg.DescribeTransactionsResponseTransactionState {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, apierr.Code(err)
			st.ProducerID, st.ProducerEpoch = noProducerID, noProducerEpoch
			return st
		}
		if id == "" {
			finish(i, errState(errInvalidRequest("The transactional id is empty.")))
			continue
		}
		runtime.Read(s.rt, "describe-transactions", s.PartitionFor(id), func(sh *Shard) (kmsg.DescribeTransactionsResponseTransactionState, error) {
			return sh.describe(id)
		}, func(st kmsg.DescribeTransactionsResponseTransactionState, err error) {
			if err != nil {
				st = errState(err)
			}
			finish(i, st)
		})
	}
}

func (s *Shard) describe(id string) (kmsg.DescribeTransactionsResponseTransactionState, error) {
	st := kmsg.NewDescribeTransactionsResponseTransactionState()
	st.TransactionalID = id
	m := s.txns[id]
	if m == nil {
		return st, apierr.Errorf(kerr.TransactionalIDNotFound, "Transactional id %s is not known.", id)
	}
	st.ProducerID, st.ProducerEpoch = m.producerID, m.producerEpoch
	st.State = m.state.String()
	st.TimeoutMillis = m.timeoutMs
	st.StartTimestamp = m.startTimestamp
	for _, tp := range m.sortedPartitions() {
		if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
			st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
		}
		t := &st.Topics[len(st.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	return st, nil
}

// ListTransactions lists the transactions coordinated here (Kafka's
// listTransactionStates), filtered by state names (unknown names are
// returned in UnknownStateFilters), producer ids, v1's duration (open
// longer than it) and v2's transactional id pattern (an RE2 regular
// expression the whole id must match). While any partition is loading
// the answer is COORDINATOR_LOAD_IN_PROGRESS.
func (s *Service) ListTransactions(req *kmsg.ListTransactionsRequest, done func(*kmsg.ListTransactionsResponse)) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := listFilter{states: map[State]bool{}, pids: map[int64]bool{}, duration: -1}
	for _, name := range req.StateFilters {
		st, ok := stateByName(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.states[st] = true
	}
	f.anyState = len(req.StateFilters) == 0
	for _, pid := range req.ProducerIDFilters {
		f.pids[pid] = true
	}
	if req.Version >= 1 {
		f.duration = req.DurationFilterMillis
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			done(resp)
			return
		}
		f.pattern = re
	}
	resp.TransactionStates = []kmsg.ListTransactionsResponseTransactionState{}
	runtime.ReadAll(s.rt, "list-transactions", func(sh *Shard) ([]kmsg.ListTransactionsResponseTransactionState, error) {
		return sh.list(&f), nil
	}, func(rs []runtime.PartitionResult[[]kmsg.ListTransactionsResponseTransactionState]) {
		for _, r := range rs {
			if r.Err != nil {
				if errors.Is(r.Err, kerr.CoordinatorLoadInProgress) {
					resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
					resp.TransactionStates = []kmsg.ListTransactionsResponseTransactionState{}
					done(resp)
					return
				}
				continue // resigned meanwhile: not coordinated here
			}
			resp.TransactionStates = append(resp.TransactionStates, r.Response...)
		}
		sort.Slice(resp.TransactionStates, func(i, j int) bool {
			return resp.TransactionStates[i].TransactionalID < resp.TransactionStates[j].TransactionalID
		})
		done(resp)
	})
}

type listFilter struct {
	anyState bool
	states   map[State]bool
	pids     map[int64]bool
	duration int64
	pattern  *regexp.Regexp
}

func (s *Shard) list(f *listFilter) []kmsg.ListTransactionsResponseTransactionState {
	now := s.nowMs()
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		switch {
		case len(f.pids) > 0 && !f.pids[m.producerID]:
			continue
		case !f.anyState && !f.states[m.state]:
			continue
		case f.duration >= 0 && now-m.startTimestamp <= f.duration:
			continue
		case f.pattern != nil && !f.pattern.MatchString(id):
			continue
		}
		out = append(out, kmsg.ListTransactionsResponseTransactionState{TransactionalID: id, ProducerID: m.producerID, TransactionState: m.state.String()})
	}
	return out
}
