package kapi

// UnregisterBroker, version 0 (KIP-631): removes a retired broker's
// registration. The controller decides (broker/controller, cluster.go:
// the broker leaves every ISR and ELR and an UnregisterBrokerRecord
// removes it); the broker forwards the request as it came, as Kafka's do.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleUnregisterBroker(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.UnregisterBrokerRequest)
	r, err := h.forward(rc.Context(), req, 0)
	if err != nil {
		return errorResponse(req, err)
	}
	return r
}
