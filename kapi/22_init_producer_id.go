package kapi

// InitProducerId, versions 0 to 5.
//
//   - v1: no change on the wire; v2: flexible versions.
//   - v3: producer_id and producer_epoch in the request, so an idempotent
//     producer can bump its epoch after an error (KIP-360).
//   - v4: no change on the wire; v5: KIP-890 (transactions).
//
// Idempotent producers (no transactional id) always get a fresh producer
// id with epoch 0, as in Kafka. Ids come in blocks of 1000 from the active
// controller (AllocateProducerIds, written to the metadata log as a
// ProducerIdsRecord), as Kafka's RPCProducerIdManager gets them, so no id
// is ever handed out twice, across restarts and brokers.
// Transactional ids need the transaction coordinator, which does not exist
// yet: they are answered COORDINATOR_NOT_AVAILABLE.

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const producerIDBlockSize = 1000

// producerIDManager hands out producer ids from blocks allocated durably in
// the cluster metadata.
type producerIDManager struct {
	mu       sync.Mutex
	next     int64
	end      int64 // exclusive
	allocate func(n int) (int64, error)
}

func (m *producerIDManager) generate() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next >= m.end {
		first, err := m.allocate(producerIDBlockSize)
		if err != nil {
			return -1, err
		}
		m.next, m.end = first, first+producerIDBlockSize
	}
	id := m.next
	m.next++
	return id, nil
}

// allocateProducerIDs asks the controller for the next block.
func (h *Handler) allocateProducerIDs(n int) (int64, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = h.cfg.NodeID, h.cfg.BrokerEpoch()
	r, err := h.forward(context.Background(), req, 0)
	if err != nil {
		return -1, err
	}
	resp := r.(*kmsg.AllocateProducerIDsResponse)
	if resp.ErrorCode != 0 {
		return -1, kerr.ErrorForCode(resp.ErrorCode)
	}
	if int(resp.ProducerIDLen) != n {
		return -1, fmt.Errorf("the controller handed out %d producer ids, not %d", resp.ProducerIDLen, n)
	}
	return resp.ProducerIDStart, nil
}

func (h *Handler) handleInitProducerID(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	id, err := h.producerIDs.generate()
	if err != nil {
		h.log.Error("allocating producer ids", "err", err)
		resp.ErrorCode = ErrorCode(err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
